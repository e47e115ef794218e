//! Users changed at runtime: ACL SETUSER (every rule Cairn serves, refusals, atomicity),
//! GETUSER and LIST shapes, DELUSER of a connected user, permissions applied to
//! connections already authenticated, ACL SAVE then a restart, ACL LOAD of good and bad
//! files.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;
use std::time::{Duration, Instant};

use common::{start, start_in, Client, Running};
use sha2::{Digest, Sha256};

fn sha(password: &str) -> String {
    Sha256::digest(password.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A server with a users file (`admin` may do anything) and a connection as `admin`.
fn with_users_file(extra: &str) -> (Running, Client, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(&path, format!("admin adminpw\n{extra}")).unwrap();
    let users = cairn_server::Users::load(&path).unwrap();
    let file = path.clone();
    let srv = start_in(dir, move |c| {
        c.users = Some(users);
        c.users_file = Some(file);
    });
    let mut admin = Client::connect(srv.addr);
    assert_eq!(admin.call(&["AUTH", "admin", "adminpw"]), "+OK");
    (srv, admin, path)
}

fn auth(srv: &Running, user: &str, password: &str) -> (Client, String) {
    let mut c = Client::connect(srv.addr);
    let reply = c.call(&["AUTH", user, password]);
    (c, reply)
}

const WRONGPASS: &str = "-WRONGPASS invalid username-password pair or user is disabled.";

#[test]
fn a_new_user_is_off_without_passwords_or_permissions() {
    let (srv, mut admin, _) = with_users_file("");
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob"]), "+OK");
    assert_eq!(
        admin.call(&["ACL", "GETUSER", "bob"]),
        "*[$flags,*[$off],$passwords,*[],$commands,$-@all,$keys,$,$channels,$,$selectors,*[]]"
    );
    let list = admin.call(&["ACL", "LIST"]);
    assert!(list.contains("$user bob off resetchannels -@all"), "{list}");
    assert_eq!(auth(&srv, "bob", "").1, WRONGPASS);
    assert_eq!(admin.call(&["ACL", "GETUSER", "nobody"]), "$nil");
    assert_eq!(admin.call(&["ACL", "USERS"]), "*[$admin,$bob,$default]");
    srv.shutdown();
}

#[test]
fn password_rules() {
    let (srv, mut admin, _) = with_users_file("");
    let set = |admin: &mut Client, rules: &[&str]| {
        let mut args = vec!["ACL", "SETUSER", "bob"];
        args.extend_from_slice(rules);
        admin.call(&args)
    };
    assert_eq!(
        set(&mut admin, &["on", ">one", ">two", "~*", "&*", "+@all"]),
        "+OK"
    );
    assert_eq!(auth(&srv, "bob", "one").1, "+OK");
    assert_eq!(auth(&srv, "bob", "two").1, "+OK");
    assert_eq!(auth(&srv, "bob", "three").1, WRONGPASS);
    let getuser = admin.call(&["ACL", "GETUSER", "bob"]);
    assert_eq!(
        getuser,
        format!(
            "*[$flags,*[$on],$passwords,*[${},${}],$commands,$+@all,$keys,$~*,$channels,$&*,$selectors,*[]]",
            sha("one"),
            sha("two")
        )
    );
    assert_eq!(set(&mut admin, &["<one"]), "+OK");
    assert_eq!(auth(&srv, "bob", "one").1, WRONGPASS);
    assert_eq!(auth(&srv, "bob", "two").1, "+OK");
    assert_eq!(
        set(&mut admin, &["<one"]),
        "-ERR Error in ACL SETUSER modifier '<...': The password you are trying to remove from the user does not exist"
    );
    let three = sha("three");
    assert_eq!(set(&mut admin, &[&format!("#{three}")]), "+OK");
    assert_eq!(auth(&srv, "bob", "three").1, "+OK");
    assert_eq!(set(&mut admin, &[&format!("!{three}")]), "+OK");
    assert_eq!(auth(&srv, "bob", "three").1, WRONGPASS);
    assert_eq!(
        set(&mut admin, &["#abc"]),
        "-ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
    );
    assert_eq!(set(&mut admin, &["nopass"]), "+OK");
    assert_eq!(auth(&srv, "bob", "anything").1, "+OK");
    assert!(admin
        .call(&["ACL", "GETUSER", "bob"])
        .starts_with("*[$flags,*[$on,$nopass],$passwords,*[]"));
    assert_eq!(set(&mut admin, &["resetpass"]), "+OK");
    assert_eq!(auth(&srv, "bob", "anything").1, WRONGPASS);
    assert_eq!(set(&mut admin, &[">four", "off"]), "+OK");
    assert_eq!(
        auth(&srv, "bob", "four").1,
        WRONGPASS,
        "an off user cannot AUTH"
    );
    assert_eq!(set(&mut admin, &["on"]), "+OK");
    assert_eq!(auth(&srv, "bob", "four").1, "+OK");
    assert_eq!(set(&mut admin, &["reset"]), "+OK");
    assert!(admin
        .call(&["ACL", "LIST"])
        .contains("$user bob off resetchannels -@all"));
    // No password is ever shown in clear.
    let list = admin.call(&["ACL", "LIST"]);
    // (None of them can be part of a hex hash: each has a letter past `f`.)
    for secret in ["one", "two", "three", "four", "adminpw"] {
        assert!(!list.contains(secret), "{list}");
    }
    srv.shutdown();
}

#[test]
fn refused_rules_change_nothing() {
    let (srv, mut admin, _) = with_users_file("");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all"]),
        "+OK"
    );
    let before = admin.call(&["ACL", "GETUSER", "bob"]);
    for (rule, why) in [
        ("bogus", "Syntax error"),
        ("~foo*", "Cairn cannot honour this rule"),
        ("&news", "Cairn cannot honour this rule"),
        ("+get", "Cairn cannot honour this rule"),
        ("-@dangerous", "Cairn cannot honour this rule"),
        ("%R~*", "Cairn cannot honour this rule"),
        ("(+@all ~*)", "Cairn cannot honour this rule"),
    ] {
        let reply = admin.call(&["ACL", "SETUSER", "bob", "off", "nopass", rule, "-@all"]);
        let expected = format!("-ERR Error in ACL SETUSER modifier '{rule}': {why}");
        assert!(reply.starts_with(&expected), "{rule}: {reply}");
        assert_eq!(admin.call(&["ACL", "GETUSER", "bob"]), before, "{rule}");
    }
    // A refused rule on a new user does not create it.
    assert!(admin
        .call(&["ACL", "SETUSER", "carol", "on", "bogus"])
        .starts_with("-ERR"));
    assert_eq!(admin.call(&["ACL", "GETUSER", "carol"]), "$nil");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "a b"]),
        "-ERR Usernames can't contain spaces or null characters"
    );
    assert_eq!(
        admin.call(&["ACL", "SETUSER"]),
        "-ERR wrong number of arguments for 'acl|setuser' command"
    );
    srv.shutdown();
}

#[test]
fn permission_rules_apply_at_once_to_authenticated_connections() {
    let (srv, mut admin, _) = with_users_file("");
    assert_eq!(
        admin.call(&[
            "ACL",
            "SETUSER",
            "bob",
            "on",
            ">pw",
            "allkeys",
            "allchannels",
            "allcommands"
        ]),
        "+OK"
    );
    let (mut bob, ok) = auth(&srv, "bob", "pw");
    assert_eq!(ok, "+OK");
    assert_eq!(bob.call(&["SET", "k", "1"]), "+OK");
    assert!(bob.call(&["ACL", "LIST"]).starts_with("*["));

    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "-@write"]), "+OK");
    assert_eq!(
        bob.call(&["SET", "k", "2"]),
        "-NOPERM User bob has no permissions to run the 'set' command"
    );
    assert_eq!(
        bob.call(&["INCR", "n"]),
        "-NOPERM User bob has no permissions to run the 'incr' command"
    );
    assert_eq!(bob.call(&["GET", "k"]), "$1");
    assert!(
        bob.call(&["ACL", "USERS"]).starts_with("*["),
        "admin is still granted"
    );
    assert!(admin
        .call(&["ACL", "GETUSER", "bob"])
        .contains("$commands,$+@all -@write,"));

    assert_eq!(
        admin.call(&["ACL", "SETUSER", "bob", "+@write", "-@admin"]),
        "+OK"
    );
    assert_eq!(bob.call(&["SET", "k", "3"]), "+OK");
    assert_eq!(
        bob.call(&["ACL", "SETUSER", "eve", "on"]),
        "-NOPERM User bob has no permissions to run the 'acl|setuser' command"
    );
    assert_eq!(
        bob.call(&["ACL", "GETUSER", "bob"]),
        "-NOPERM User bob has no permissions to run the 'acl|getuser' command"
    );
    assert_eq!(bob.call(&["ACL", "WHOAMI"]), "$bob");

    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "resetkeys"]), "+OK");
    assert_eq!(
        bob.call(&["GET", "k"]),
        "-NOPERM No permissions to access a key"
    );
    assert_eq!(
        bob.call(&["SET", "k", "4"]),
        "-NOPERM No permissions to access a key"
    );
    assert_eq!(bob.call(&["PING"]), "+PONG");
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "~*"]), "+OK");
    assert_eq!(bob.call(&["GET", "k"]), "$3");

    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "nocommands"]), "+OK");
    assert_eq!(
        bob.call(&["PING"]),
        "-NOPERM User bob has no permissions to run the 'ping' command"
    );
    assert!(admin
        .call(&["ACL", "SETUSER", "bob", "+@read"])
        .contains("Cairn cannot honour"));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "bob", "-@read", "+@all", "+@read"]),
        "+OK"
    );
    assert_eq!(bob.call(&["PING"]), "+PONG");

    // Inside MULTI the checks run when a command is queued, against the current rules.
    assert_eq!(bob.call(&["MULTI"]), "+OK");
    assert_eq!(bob.call(&["SET", "k", "5"]), "+QUEUED");
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "-@write"]), "+OK");
    assert!(bob.call(&["SET", "k", "6"]).starts_with("-NOPERM"));
    assert!(bob.call(&["EXEC"]).starts_with("-EXECABORT"));
    assert_eq!(bob.call(&["GET", "k"]), "$3");

    // Turning a user off leaves its connections working (as Redis), but refuses AUTH.
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "off"]), "+OK");
    assert_eq!(bob.call(&["GET", "k"]), "$3");
    assert_eq!(auth(&srv, "bob", "pw").1, WRONGPASS);
    srv.shutdown();
}

#[test]
fn a_read_only_user_changes_nothing() {
    let (srv, _admin, _) = with_users_file("reader letmein readonly\n");
    let (mut r, ok) = auth(&srv, "reader", "letmein");
    assert_eq!(ok, "+OK");
    for (sub, args) in [
        ("setuser", vec!["ACL", "SETUSER", "reader", "+@all"]),
        ("deluser", vec!["ACL", "DELUSER", "admin"]),
        ("getuser", vec!["ACL", "GETUSER", "admin"]),
        ("save", vec!["ACL", "SAVE"]),
        ("load", vec!["ACL", "LOAD"]),
    ] {
        assert_eq!(
            r.call(&args),
            format!("-NOPERM User reader has no permissions to run the 'acl|{sub}' command")
        );
    }
    assert!(r.call(&["SET", "k", "v"]).starts_with("-NOPERM"));
    srv.shutdown();
}

/// True once `c`'s connection is closed by the server, within `limit`.
fn closed_within(c: &mut Client, limit: Duration) -> bool {
    c.writer.set_read_timeout(Some(limit)).unwrap();
    let began = Instant::now();
    c.closed() && began.elapsed() < limit
}

#[test]
fn deluser_counts_refuses_default_and_closes_the_users_connections() {
    let (srv, mut admin, _) = with_users_file("bob pw\ncarol pw\n");
    let (mut idle, _) = auth(&srv, "bob", "pw");
    let (mut busy, _) = auth(&srv, "bob", "pw");
    let (mut carol, _) = auth(&srv, "carol", "pw");
    assert_eq!(idle.call(&["PING"]), "+PONG");
    assert_eq!(
        admin.call(&["ACL", "DELUSER", "bob", "default"]),
        "-ERR The 'default' user cannot be removed"
    );
    assert_eq!(busy.call(&["PING"]), "+PONG", "nothing was deleted");
    assert_eq!(
        admin.call(&["ACL", "DELUSER", "bob", "nobody", "bob"]),
        ":1"
    );
    assert_eq!(admin.call(&["ACL", "DELUSER", "bob"]), ":0");
    // A connection of the deleted user that sends a command is closed without a reply;
    // an idle one is closed within a tick of its loop.
    busy.send(&[b"SET", b"k", b"v"]);
    assert!(closed_within(&mut busy, Duration::from_secs(5)));
    assert!(closed_within(&mut idle, Duration::from_secs(5)));
    assert_eq!(admin.call(&["EXISTS", "k"]), ":0");
    assert_eq!(auth(&srv, "bob", "pw").1, WRONGPASS);
    // The other users' connections are untouched.
    assert_eq!(carol.call(&["PING"]), "+PONG");
    // A client that deletes its own user gets the reply, then is closed.
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "root", "on", ">r", "~*", "&*", "+@all"]),
        "+OK"
    );
    let (mut root, _) = auth(&srv, "root", "r");
    assert_eq!(root.call(&["ACL", "DELUSER", "root"]), ":1");
    assert!(closed_within(&mut root, Duration::from_secs(5)));
    assert_eq!(
        admin.call(&["ACL", "DELUSER"]),
        "-ERR wrong number of arguments for 'acl|deluser' command"
    );
    srv.shutdown();
}

#[test]
fn save_then_restart_keeps_the_users_and_load_rereads_the_file() {
    let (srv, mut admin, path) = with_users_file("reader letmein readonly\n");
    assert_eq!(
        admin
            .call(&["ACL", "SETUSER", "bob", "on", ">one", ">two", "~*", "&*", "+@all", "-@admin"]),
        "+OK"
    );
    assert_eq!(admin.call(&["ACL", "SETUSER", "ghost"]), "+OK");
    let list = admin.call(&["ACL", "LIST"]);
    // A stale temporary file, here a link to a file others may read, is replaced, not
    // written through; the saved file keeps the old one's owner and group bits only.
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap();
    let elsewhere = dir.join("elsewhere");
    std::fs::write(&elsewhere, "untouched").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(".users.acl.tmp")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(admin.call(&["ACL", "SAVE"]), "+OK");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "{mode:o}");
    let text = std::fs::read_to_string(&path).unwrap();
    let rules: String = text.lines().filter(|l| !l.starts_with('#')).collect();
    for secret in ["one", "two", "letmein", "adminpw"] {
        assert!(!rules.contains(secret), "{text}");
    }
    assert!(
        text.contains(&format!(
            "user bob on #{} #{} ~* &* +@all -@admin",
            sha("one"),
            sha("two")
        )),
        "{text}"
    );

    // A restart on the saved file knows the same users.
    let Running {
        stop,
        waiter,
        dir: tmp,
        ..
    } = srv;
    stop.shutdown();
    waiter.unwrap().join().unwrap().unwrap();
    let users = cairn_server::Users::load(&path).unwrap();
    let file = path.clone();
    let srv = start_in(tmp, move |c| {
        c.users = Some(users);
        c.users_file = Some(file);
    });
    let mut admin = Client::connect(srv.addr);
    assert_eq!(admin.call(&["AUTH", "admin", "adminpw"]), "+OK");
    assert_eq!(admin.call(&["ACL", "LIST"]), list);
    assert_eq!(auth(&srv, "bob", "two").1, "+OK");
    assert_eq!(auth(&srv, "reader", "letmein").1, "+OK");

    // ACL LOAD: a bad file changes nothing and names the line.
    let (mut bob, _) = auth(&srv, "bob", "one");
    let (mut reader, _) = auth(&srv, "reader", "letmein");
    std::fs::write(&path, "admin adminpw\nbob pw\nuser x on ~foo*\n").unwrap();
    let reply = admin.call(&["ACL", "LOAD"]);
    assert!(reply.starts_with("-ERR Error loading ACLs: "), "{reply}");
    assert!(
        reply.contains("line 3: Error in ACL SETUSER modifier '~foo*'"),
        "{reply}"
    );
    assert_eq!(admin.call(&["ACL", "LIST"]), list);
    // A good file replaces the users: kept users' connections follow their new rules,
    // connections of users gone are closed.
    std::fs::write(&path, "admin adminpw\nbob pw readonly\n").unwrap();
    assert_eq!(admin.call(&["ACL", "LOAD"]), "+OK");
    assert_eq!(admin.call(&["ACL", "USERS"]), "*[$admin,$bob,$default]");
    assert!(bob.call(&["SET", "k", "v"]).starts_with("-NOPERM"));
    assert_eq!(bob.call(&["GET", "k"]), "$nil");
    assert!(closed_within(&mut reader, Duration::from_secs(5)));
    assert_eq!(auth(&srv, "bob", "pw").1, "+OK");
    assert_eq!(auth(&srv, "bob", "one").1, WRONGPASS);
    assert_eq!(auth(&srv, "ghost", "").1, WRONGPASS);
    // A missing file is refused too.
    std::fs::remove_file(&path).unwrap();
    assert!(admin
        .call(&["ACL", "LOAD"])
        .starts_with("-ERR Error loading ACLs: read "));
    assert_eq!(auth(&srv, "bob", "pw").1, "+OK");
    srv.shutdown();
}

#[test]
fn without_a_users_file_save_and_load_are_refused_and_default_can_be_locked() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    for sub in ["SAVE", "LOAD"] {
        assert!(c
            .call(&["ACL", sub])
            .starts_with("-ERR This Redis instance is not configured to use an ACL file."));
    }
    assert_eq!(
        c.call(&["ACL", "LIST"]),
        "*[$user default on nopass ~* &* +@all]"
    );
    // Giving `default` a password: new connections must AUTH, this one goes on.
    assert_eq!(c.call(&["ACL", "SETUSER", "default", ">pw"]), "+OK");
    assert_eq!(c.call(&["PING"]), "+PONG");
    let mut other = Client::connect(srv.addr);
    assert_eq!(
        other.call(&["GET", "k"]),
        "-NOAUTH Authentication required."
    );
    assert_eq!(other.call(&["AUTH", "pw"]), "+OK");
    assert_eq!(other.call(&["GET", "k"]), "$nil");
    assert_eq!(c.call(&["ACL", "SETUSER", "default", "nopass"]), "+OK");
    let mut open = Client::connect(srv.addr);
    assert_eq!(open.call(&["GET", "k"]), "$nil");
    assert!(open
        .call(&["AUTH", "x"])
        .starts_with("-ERR AUTH <password> called without any password configured"));
    srv.shutdown();
}

/// ACL changes take effect when they run, and a transaction may run its commands again
/// (a conflict) or not at all (a watched key changed): ACL is refused inside MULTI, and
/// the transaction with it is aborted.
#[test]
fn acl_is_refused_inside_a_transaction() {
    let (srv, mut admin, _) = with_users_file("");
    assert_eq!(admin.call(&["MULTI"]), "+OK");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "bob", "on", ">pw"]),
        "-ERR Command not allowed inside a transaction"
    );
    assert_eq!(admin.call(&["SET", "k", "v"]), "+QUEUED");
    assert!(admin.call(&["EXEC"]).starts_with("-EXECABORT"));
    assert_eq!(admin.call(&["ACL", "USERS"]), "*[$admin,$default]");
    assert_eq!(admin.call(&["GET", "k"]), "$nil");
    srv.shutdown();
}

/// `-@admin` covers the admin subcommands of commands that are not admin as a whole
/// (CONFIG, CLIENT LIST), as in Redis; a client's own connection commands stay allowed.
#[test]
fn minus_admin_refuses_config_and_client_list() {
    let (srv, mut admin, _) = with_users_file("");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", "bob", "on", ">pw", "~*", "&*", "+@all", "-@admin"]),
        "+OK"
    );
    let (mut bob, reply) = auth(&srv, "bob", "pw");
    assert_eq!(reply, "+OK");
    for cmd in [
        &["CONFIG", "GET", "save"][..],
        &["CONFIG", "RESETSTAT"],
        &["CLIENT", "LIST"],
        &["ACL", "LIST"],
    ] {
        let reply = bob.call(cmd);
        assert!(reply.starts_with("-NOPERM"), "{cmd:?}: {reply}");
    }
    assert!(bob.call(&["CLIENT", "ID"]).starts_with(':'));
    assert_eq!(bob.call(&["ACL", "WHOAMI"]), "$bob");
    assert_eq!(bob.call(&["SET", "k", "v"]), "+OK");
    let config = admin.call(&["CONFIG", "GET", "save"]);
    assert!(
        config.starts_with('%') || config.starts_with('*'),
        "{config}"
    );
    assert!(admin.call(&["CLIENT", "LIST"]).starts_with('$'));
    srv.shutdown();
}

#[test]
fn cat_lists_redis_categories_and_cairns_commands_in_each() {
    let (srv, mut admin, _) = with_users_file("user reader on >pw ~* &* +@all -@write -@admin\n");
    let all = admin.call(&["ACL", "CAT"]);
    assert!(
        all.starts_with("*[$keyspace,$read,$write,$set,$sortedset,$list,$hash,$string,")
            && all.ends_with(",$connection,$transaction,$scripting]"),
        "{all}"
    );
    let strings = admin.call(&["ACL", "CAT", "String"]);
    for name in ["$get,", "$set,", "$mget,", "$incrby,"] {
        assert!(strings.contains(name), "{strings}");
    }
    assert!(!strings.contains("$del"), "{strings}");
    assert_eq!(
        admin.call(&["ACL", "CAT", "transaction"]),
        "*[$multi,$exec,$discard,$watch,$unwatch]"
    );
    assert_eq!(admin.call(&["ACL", "CAT", "stream"]), "*[]");
    assert_eq!(
        admin.call(&["ACL", "CAT", "nope"]),
        "-ERR Unknown category 'nope'"
    );
    assert_eq!(
        admin.call(&["ACL", "CAT", "a", "b"]),
        "-ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP."
    );
    // CAT and GENPASS are not `@admin`: a user without admin rights may run them.
    let (mut reader, _) = auth(&srv, "reader", "pw");
    assert_eq!(reader.call(&["ACL", "CAT", "admin"]), "*[$shutdown]");
    assert!(reader.call(&["ACL", "GENPASS"]).starts_with('$'));
    srv.shutdown();
}

#[test]
fn genpass_gives_fresh_hex_of_the_asked_bits() {
    let (srv, mut admin, _) = with_users_file("");
    let hex = |reply: String| -> String {
        let text = reply.strip_prefix('$').expect("a bulk string").to_string();
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{text}"
        );
        text
    };
    let one = hex(admin.call(&["ACL", "GENPASS"]));
    let two = hex(admin.call(&["ACL", "GENPASS"]));
    assert_eq!((one.len(), two.len()), (64, 64));
    assert_ne!(one, two);
    assert_eq!(hex(admin.call(&["ACL", "GENPASS", "5"])).len(), 2);
    assert_eq!(hex(admin.call(&["ACL", "GENPASS", "4096"])).len(), 1024);
    let bad = "-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096";
    assert_eq!(admin.call(&["ACL", "GENPASS", "0"]), bad);
    assert_eq!(admin.call(&["ACL", "GENPASS", "4097"]), bad);
    assert_eq!(
        admin.call(&["ACL", "GENPASS", "many"]),
        "-ERR value is not an integer or out of range"
    );
    srv.shutdown();
}

#[test]
fn dryrun_answers_as_running_the_command_would() {
    let (srv, mut admin, _) = with_users_file(
        "user reader on >pw ~* &* +@all -@write -@admin\nuser nokeys on >pw +@all\nuser nothing on >pw ~* -@all\n",
    );
    let dry = |admin: &mut Client, args: &[&str]| {
        let mut all = vec!["ACL", "DRYRUN"];
        all.extend_from_slice(args);
        admin.call(&all)
    };
    assert_eq!(dry(&mut admin, &["reader", "get", "k"]), "+OK");
    assert_eq!(
        dry(&mut admin, &["reader", "SET", "k", "v"]),
        "$This user has no permissions to run the 'set' command"
    );
    assert_eq!(
        dry(&mut admin, &["reader", "config", "get", "maxmemory"]),
        "$This user has no permissions to run the 'config|get' command"
    );
    assert_eq!(
        dry(&mut admin, &["nokeys", "get", "k"]),
        "$This user has no permissions to access the 'k' key"
    );
    assert_eq!(dry(&mut admin, &["nokeys", "ping"]), "+OK");
    assert_eq!(
        dry(&mut admin, &["nothing", "ping"]),
        "$This user has no permissions to run the 'ping' command"
    );
    assert_eq!(
        dry(&mut admin, &["nothing", "acl", "whoami"]),
        "$This user has no permissions to run the 'acl|whoami' command"
    );
    assert_eq!(dry(&mut admin, &["nothing", "auth", "a", "b"]), "+OK");
    assert_eq!(
        dry(&mut admin, &["nobody", "get", "k"]),
        "-ERR User 'nobody' not found"
    );
    assert_eq!(
        dry(&mut admin, &["reader", "NOSUCH"]),
        "-ERR Command 'NOSUCH' not found"
    );
    assert_eq!(
        dry(&mut admin, &["reader", "get"]),
        "-ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        dry(&mut admin, &["reader"]),
        "-ERR wrong number of arguments for 'acl|dryrun' command"
    );
    // The verdicts are the dispatcher's: the refused user is refused for real.
    let (mut nothing, _) = auth(&srv, "nothing", "pw");
    assert_eq!(
        nothing.call(&["ACL", "WHOAMI"]),
        "-NOPERM User nothing has no permissions to run the 'acl|whoami' command"
    );
    // DRYRUN itself is `@admin`.
    let (mut reader, _) = auth(&srv, "reader", "pw");
    assert_eq!(
        reader.call(&["ACL", "DRYRUN", "reader", "get", "k"]),
        "-NOPERM User reader has no permissions to run the 'acl|dryrun' command"
    );
    srv.shutdown();
}

#[test]
fn log_records_refused_auths_commands_and_keys() {
    let (srv, mut admin, _) = with_users_file(
        "user reader on >pw ~* &* +@all -@write -@admin\nuser nokeys on >pw +@all\n",
    );
    assert_eq!(admin.call(&["ACL", "LOG"]), "*[]");
    // Two wrong passwords for one user count on one entry.
    assert_eq!(auth(&srv, "reader", "wrong").1, WRONGPASS);
    assert_eq!(auth(&srv, "reader", "wrong again").1, WRONGPASS);
    let (mut reader, _) = auth(&srv, "reader", "pw");
    assert!(reader.call(&["SET", "k", "v"]).starts_with("-NOPERM"));
    assert!(reader
        .call(&["CONFIG", "GET", "maxmemory"])
        .starts_with("-NOPERM"));
    let (mut nokeys, _) = auth(&srv, "nokeys", "pw");
    assert!(nokeys.call(&["GET", "secret"]).starts_with("-NOPERM"));
    let log = admin.call(&["ACL", "LOG"]);
    let entries: Vec<&str> = log.split("$count,").skip(1).collect();
    assert_eq!(entries.len(), 4, "{log}");
    let expect = [
        ":1,$reason,$key,$context,$toplevel,$object,$secret,$username,$nokeys,",
        ":1,$reason,$command,$context,$toplevel,$object,$config|get,$username,$reader,",
        ":1,$reason,$command,$context,$toplevel,$object,$set,$username,$reader,",
        ":2,$reason,$auth,$context,$toplevel,$object,$AUTH,$username,$reader,",
    ];
    for (entry, want) in entries.iter().zip(expect) {
        assert!(entry.starts_with(want), "{entry} should start with {want}");
        assert!(entry.contains("$age-seconds,$0.") && entry.contains("$client-info,$id="));
        assert!(entry.contains("$entry-id,:") && entry.contains("$timestamp-last-updated,:"));
    }
    assert!(!log.contains("wrong"), "a password reached the log: {log}");
    // A command queued, then refused when EXEC runs it, is in context `multi`.
    let (mut writer, _) = auth(&srv, "nokeys", "pw");
    assert_eq!(admin.call(&["ACL", "SETUSER", "nokeys", "~*"]), "+OK");
    assert_eq!(writer.call(&["MULTI"]), "+OK");
    assert_eq!(writer.call(&["SET", "k", "1"]), "+QUEUED");
    assert_eq!(admin.call(&["ACL", "SETUSER", "nokeys", "-@write"]), "+OK");
    assert!(writer.call(&["EXEC"]).contains("NOPERM"));
    let newest = admin.call(&["ACL", "LOG", "1"]);
    assert!(
        newest.starts_with("*[*[$count,:1,$reason,$command,$context,$multi,$object,$set,"),
        "{newest}"
    );
    assert_eq!(admin.call(&["ACL", "LOG", "-1"]), "*[]");
    assert_eq!(
        admin.call(&["ACL", "LOG", "many"]),
        "-ERR value is not an integer or out of range"
    );
    // LOG is `@admin`; its refusal is logged too.
    assert!(reader.call(&["ACL", "LOG"]).starts_with("-NOPERM"));
    assert!(admin
        .call(&["ACL", "LOG", "1"])
        .contains("$object,$acl|log,"));
    assert_eq!(admin.call(&["ACL", "LOG", "RESET"]), "+OK");
    assert_eq!(admin.call(&["ACL", "LOG"]), "*[]");
    srv.shutdown();
}
