//! The skip list's tests: model tests against a sorted map, the group insert's, and
//! readers beside a writer.

use super::*;
use std::collections::BTreeMap;

/// The memtable's order as a sortable key.
type ModelKey = (u32, Vec<u8>, std::cmp::Reverse<u64>);

/// Every entry as `(keyspace, encoded key, value)`, in order, found by walking the
/// links forward from the first entry or backward from the last.
fn walk(list: &SkipList, backward: bool) -> Vec<(u32, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut e = if backward { list.last() } else { list.first() };
    while let Some(entry) = e {
        out.push((
            entry.keyspace(),
            entry.key().to_vec(),
            entry.value().to_vec(),
        ));
        e = if backward { entry.prev() } else { entry.next() };
    }
    if backward {
        out.reverse();
    }
    out
}

/// Asserts that walking `list` forward and backward yields exactly `model`'s
/// entries, in its order.
fn assert_walks_match(list: &SkipList, model: &BTreeMap<ModelKey, Vec<u8>>) {
    let expect: Vec<(u32, Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|((ks, user, t), v)| (*ks, encoded(user, t.0), v.clone()))
        .collect();
    assert_eq!(walk(list, false), expect);
    assert_eq!(walk(list, true), expect);
}

/// An entry's place in the order, as the model keys it.
fn model_key(e: Entry<'_>) -> ModelKey {
    (
        e.keyspace(),
        e.user_key().to_vec(),
        std::cmp::Reverse(e.trailer()),
    )
}

fn encoded(user: &[u8], trailer: u64) -> Vec<u8> {
    let mut k = user.to_vec();
    k.extend_from_slice(&trailer.to_le_bytes());
    k
}

#[test]
fn entries_sort_by_keyspace_user_key_then_newest_first() {
    let list = SkipList::new();
    assert!(list.is_empty() && list.first().is_none() && list.last().is_none());
    list.insert(2, b"a", 5, b"x");
    list.insert(1, b"b", 7, b"");
    list.insert(1, b"b", 9, b"newer");
    list.insert(1, b"", 1, b"empty key");
    let all = walk(&list, false);
    let keys: Vec<(u32, Vec<u8>)> = all.iter().map(|(k, e, _)| (*k, e.clone())).collect();
    assert_eq!(
        keys,
        vec![
            (1, encoded(b"", 1)),
            (1, encoded(b"b", 9)),
            (1, encoded(b"b", 7)),
            (2, encoded(b"a", 5)),
        ]
    );
    assert_eq!(all[1].2, b"newer");
    assert_eq!(walk(&list, true), all);
    assert_eq!(list.len(), 4);

    let probe = |keyspace, user: &'static [u8], trailer| Probe {
        keyspace,
        user,
        trailer,
    };
    let e = list.seek_ge(&probe(1, b"b", 8)).unwrap();
    assert_eq!((e.user_key(), e.trailer()), (&b"b"[..], 7));
    let e = list.seek_le(&probe(1, b"b", 8)).unwrap();
    assert_eq!(e.trailer(), 9);
    let e = list.seek_lt(&probe(1, b"b", 9)).unwrap();
    assert_eq!(e.user_key(), b"");
    assert!(list.seek_lt(&probe(1, b"", u64::MAX)).is_none());
    assert!(list.seek_ge(&probe(2, b"b", u64::MAX)).is_none());
    assert_eq!(
        list.seek_le(&probe(u32::MAX, b"", 0)).unwrap().keyspace(),
        2
    );
}

#[test]
fn a_list_on_huge_pages_keeps_every_entry_in_order() {
    // 1,200 nodes of over 4 KiB (under Miri, which tracks every node written into a
    // chunk, 64 of over 96 KiB) fill more than two shared chunks, so several aligned,
    // advised chunks are used.
    let list = SkipList::with_options(true, 1 << 10);
    let (n, value_len) = if cfg!(miri) {
        (64u32, 96 << 10)
    } else {
        (1_200u32, 4096)
    };
    let value = vec![b'v'; value_len];
    for i in (0..n).rev() {
        list.insert(0, format!("key{i:06}").as_bytes(), 1, &value);
    }
    {
        let arena = list.arena.lock();
        assert!(arena.chunks.len() >= 3, "{}", arena.chunks.len());
        for c in &arena.chunks {
            assert_eq!(c.ptr.as_ptr() as usize % CHUNK_SIZE, 0);
        }
    }
    let all = walk(&list, false);
    assert_eq!(all.len(), n as usize);
    for (i, (_, key, v)) in all.iter().enumerate() {
        assert_eq!(key, &encoded(format!("key{i:06}").as_bytes(), 1));
        assert_eq!(v, &value);
    }
}

#[test]
fn node_sizes_cover_every_field_and_stay_aligned() {
    assert_eq!(node_size(1, 0, 0), Some(48));
    assert_eq!(node_size(1, 3, 0), Some(56));
    // 32 + 12 × 8 + (16 + 8) + 100 = 252 bytes, rounded up to 256.
    assert_eq!(node_size(MAX_HEIGHT, 16, 100), Some(256));
    assert_eq!(node_size(1, usize::MAX - 40, 0), None);
    assert_eq!(node_size(1, 8, usize::MAX - 60), None);
}

#[test]
fn large_values_get_a_chunk_of_their_own_and_small_ones_share() {
    let list = SkipList::new();
    let big = vec![7u8; OWN_CHUNK_ABOVE + 1];
    list.insert(0, b"big", 1, &big);
    for i in 0..100u32 {
        list.insert(0, format!("{i:08}").as_bytes(), 2, b"small");
    }
    assert!(list.allocated() >= big.len() + CHUNK_SIZE);
    assert!(list.allocated() < big.len() + 2 * CHUNK_SIZE);
    let e = list.seek_ge(&Probe {
        keyspace: 0,
        user: b"big",
        trailer: u64::MAX,
    });
    assert_eq!(e.unwrap().value(), big.as_slice());
}

#[test]
fn inserts_in_any_order_match_a_sorted_model() {
    let list = SkipList::new();
    let mut model: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let n = if cfg!(miri) { 300 } else { 5_000 };
    for i in 0..n {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let keyspace = (rng % 3) as u32;
        let user = format!("{:x}", rng % 700).into_bytes();
        let trailer = i << 8 | (rng >> 60);
        let value = vec![(i % 251) as u8; (rng % 40) as usize];
        list.insert(keyspace, &user, trailer, &value);
        model.insert((keyspace, user, std::cmp::Reverse(trailer)), value);
    }
    assert_walks_match(&list, &model);
    // Seeks land where the model's range queries do.
    for (ks, user, trailer) in [(1u32, &b"1f"[..], 5u64 << 8), (0, b"", 0), (2, b"zz", 0)] {
        assert_seeks_match(&list, &model, ks, user, trailer);
    }
}

/// Asserts that `seek_ge` and `seek_lt` of `(keyspace, user, trailer)` land where
/// `model`'s range queries do.
fn assert_seeks_match(
    list: &SkipList,
    model: &BTreeMap<ModelKey, Vec<u8>>,
    keyspace: u32,
    user: &[u8],
    trailer: u64,
) {
    let key: ModelKey = (keyspace, user.to_vec(), std::cmp::Reverse(trailer));
    let probe = Probe {
        keyspace,
        user,
        trailer,
    };
    let ge = model.range(key.clone()..).next().map(|(k, _)| k.clone());
    assert_eq!(list.seek_ge(&probe).map(model_key), ge);
    let lt = model.range(..key).next_back().map(|(k, _)| k.clone());
    assert_eq!(list.seek_lt(&probe).map(model_key), lt);
}

/// Asserts that every level of `list` is in strictly ascending order and that each
/// node on a level is on the level below; returns the nodes on each level.
fn check_levels(list: &SkipList) -> Vec<usize> {
    let mut counts = Vec::new();
    let mut below: Option<std::collections::HashSet<usize>> = None;
    for level in 0..MAX_HEIGHT {
        let mut here = std::collections::HashSet::new();
        let mut at = list.next(None, level);
        let mut last: Option<Node> = None;
        while let Some(n) = at {
            assert!(n.height() > level);
            if let Some(l) = last {
                assert_eq!(
                    l.cmp(&n.probe()),
                    Ordering::Less,
                    "level {level} out of order"
                );
            }
            if let Some(b) = &below {
                assert!(
                    b.contains(&(n.0.as_ptr() as usize)),
                    "level {level} skips below"
                );
            }
            here.insert(n.0.as_ptr() as usize);
            last = Some(n);
            at = list.next(Some(n), level);
        }
        counts.push(here.len());
        below = Some(here);
    }
    counts
}

/// Inserts `keys` as one group, each a version newer than any before (`seqno` counts
/// them), and records them in `model`. The group counts as dense (inserted through the
/// finger alone) below `dense` list entries per entry: 0 never, `usize::MAX` always.
fn insert_as_group(
    list: &SkipList,
    model: &mut BTreeMap<ModelKey, Vec<u8>>,
    keys: &[(u32, Vec<u8>)],
    seqno: &mut u64,
    dense: usize,
) {
    let entries: Vec<(u32, Vec<u8>, u64, Vec<u8>)> = keys
        .iter()
        .map(|(keyspace, user)| {
            *seqno += 1;
            (
                *keyspace,
                user.clone(),
                *seqno << 8 | 1,
                seqno.to_le_bytes().to_vec(),
            )
        })
        .collect();
    let group: Vec<NewEntry<'_>> = entries
        .iter()
        .map(|(keyspace, user, trailer, value)| NewEntry {
            keyspace: *keyspace,
            user,
            trailer: *trailer,
            value,
            user_hash: crate::memtable::filter::key_hash(user),
        })
        .collect();
    list.insert_group_with(&group, dense);
    for (keyspace, user, trailer, value) in entries {
        model.insert((keyspace, user, std::cmp::Reverse(trailer)), value);
    }
}

#[test]
fn group_inserts_in_any_order_match_a_sorted_model() {
    // Groups into an empty list and a growing one: ascending (as a write group applies
    // them), descending, or shuffled, with several versions of a key in a group (each
    // newer than the last, so later ones may take the shortcut), single inserts in
    // between, and groups of one. Each group's searches see the list as it was before
    // the group and its inserts then walk past the nodes the group linked since.
    // Each way: searches side by side (phase 1), and dense groups through the finger.
    for (point_keys, dense) in [(1 << 10, 0), (0, 0), (1 << 10, usize::MAX)] {
        let list = SkipList::with_options(false, point_keys);
        let mut model: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
        let mut rng = 0x51af_d7ed_558c_cd1du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (groups, group_len) = if cfg!(miri) { (5, 20) } else { (80, 300) };
        let mut seqno = 0u64;
        for group in 0..groups {
            let len = if group % 10 == 9 { 1 } else { group_len };
            let mut keys: Vec<(u32, Vec<u8>)> = (0..len)
                .map(|_| {
                    let r = next();
                    ((r % 2) as u32, format!("{:04}", r % 900).into_bytes())
                })
                .collect();
            match group % 3 {
                0 => keys.sort(),
                1 => keys.sort_by(|a, b| b.cmp(a)),
                _ => {}
            }
            insert_as_group(&list, &mut model, &keys, &mut seqno, dense);
            if group % 4 == 3 {
                let r = next();
                let user = format!("{:04}", r % 900).into_bytes();
                seqno += 1;
                let trailer = seqno << 8 | 1;
                list.insert(0, &user, trailer, b"single");
                model.insert((0, user, std::cmp::Reverse(trailer)), b"single".to_vec());
            }
            assert_eq!(list.len(), model.len());
        }
        assert_walks_match(&list, &model);
        let counts = check_levels(&list);
        assert_eq!(counts.first().copied(), Some(model.len()));
        assert!(counts.get(1).is_some_and(|&c| c > 0), "{counts:?}");
        // Every key's newest version (under Miri, every fifth's) is found by the point
        // index and by a search.
        let stride = if cfg!(miri) { 5 } else { 1 };
        for (keyspace, user, trailer) in model.keys().step_by(stride) {
            let hash = crate::memtable::filter::key_hash(user);
            let newest = model
                .range((*keyspace, user.clone(), std::cmp::Reverse(u64::MAX))..)
                .next()
                .map(|(k, _)| k.clone());
            if newest.as_ref().map(|k| k.2) != Some(*trailer) {
                continue;
            }
            let probe = Probe {
                keyspace: *keyspace,
                user,
                trailer: u64::MAX,
            };
            assert_eq!(list.seek_ge(&probe).map(model_key), newest);
            if let Newest::Found(e) = list.newest(*keyspace, user, hash) {
                assert_eq!(Some(model_key(e)), newest);
            }
        }
        if point_keys > 0 {
            assert!(list.shortcuts.load(Mo::Relaxed) > 0);
        }
    }
}

#[test]
fn a_group_of_new_keys_into_a_sparse_list_links_each_in_place() {
    // Every search of the group finds the same few places (the list holds 3 nodes), so
    // each insert after the first walks past the nodes the group linked before it; the
    // group is ascending, descending, then both halves interleaved.
    let orders: [fn(&mut Vec<u32>); 3] = [
        |_| {},
        |v| v.reverse(),
        |v| {
            let (a, b) = v.split_at(v.len() / 2);
            *v = a.iter().zip(b).flat_map(|(x, y)| [*x, *y]).collect();
        },
    ];
    let n = if cfg!(miri) { 60 } else { 2_000 };
    // Phase 1 always (a dense group would go through the finger alone).
    for order in orders {
        let list = SkipList::new();
        let mut model: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
        let mut seqno = 0u64;
        let fence: Vec<(u32, Vec<u8>)> = [b"0000", b"5000", b"9999"]
            .iter()
            .map(|k| (0, k.to_vec()))
            .collect();
        insert_as_group(&list, &mut model, &fence, &mut seqno, 0);
        let mut ids: Vec<u32> = (0..n).collect();
        order(&mut ids);
        let keys: Vec<(u32, Vec<u8>)> = ids
            .iter()
            .map(|i| (0, format!("{:04}x", i * 9999 / n).into_bytes()))
            .collect();
        insert_as_group(&list, &mut model, &keys, &mut seqno, 0);
        assert_walks_match(&list, &model);
        check_levels(&list);
    }
}

#[test]
fn versions_newer_and_older_than_the_newest_keep_order_and_every_seek_lands() {
    // Few keys, many versions each, mostly newer than the key's newest (the path that
    // skips the search, invariant 7) and some older (inserts of interleaved groups).
    for point_keys in [1 << 10, 0] {
        let list = SkipList::with_options(false, point_keys);
        let mut model: BTreeMap<ModelKey, Vec<u8>> = BTreeMap::new();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let n: u64 = if cfg!(miri) { 200 } else { 6_000 };
        // Inserts newer than their key's newest version already in the list.
        let mut newer = 0usize;
        for i in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let keyspace = (rng % 2) as u32;
            let user = format!("k{}", rng % 37).into_bytes();
            let seqno = if rng.is_multiple_of(5) { i / 2 } else { n + i };
            let trailer = seqno << 8 | (rng >> 62);
            if model.contains_key(&(keyspace, user.clone(), std::cmp::Reverse(trailer))) {
                continue; // the memtable never inserts an equal key
            }
            let newest = model
                .range((keyspace, user.clone(), std::cmp::Reverse(u64::MAX))..)
                .next()
                .filter(|(k, _)| k.0 == keyspace && k.1 == user)
                .map(|(k, _)| k.2 .0);
            if newest.is_some_and(|t| t < trailer) {
                newer += 1;
            }
            let value = i.to_le_bytes().to_vec();
            list.insert(keyspace, &user, trailer, &value);
            model.insert((keyspace, user, std::cmp::Reverse(trailer)), value);
        }
        assert_walks_match(&list, &model);
        let shortcuts = list.shortcuts.load(Mo::Relaxed);
        if point_keys > 0 {
            // About 3/4 of the inserts that were newer than their key's newest (the
            // nodes that drew a height of 1), and no other insert.
            assert!(newer * 2 > n as usize, "{newer} of {n}");
            assert!(shortcuts * 3 > newer * 2, "{shortcuts} of {newer}");
            assert!(shortcuts <= newer, "{shortcuts} of {newer}");
        } else {
            // Without an index every insert searches.
            assert_eq!(shortcuts, 0);
        }
        // Every version, and the place just past it, is found by a search (under Miri,
        // where each search is slow, every third version).
        let stride = if cfg!(miri) { 3 } else { 1 };
        for (ks, user, t) in model.keys().step_by(stride) {
            for trailer in [t.0, t.0 - 1] {
                assert_seeks_match(&list, &model, *ks, user, trailer);
            }
            let newest = model
                .range((*ks, user.clone(), std::cmp::Reverse(u64::MAX))..)
                .next()
                .map(|(k, _)| k.2 .0);
            let user_hash = crate::memtable::filter::key_hash(user);
            match list.newest(*ks, user, user_hash) {
                Newest::Found(e) => assert_eq!(Some(e.trailer()), newest),
                Newest::Unknown => assert_eq!(point_keys, 0),
                Newest::Absent => assert_eq!(newest, None, "a key with versions is absent"),
            }
        }
    }
}

#[test]
fn a_position_walks_both_ways_and_stops_off_the_ends() {
    let list = Arc::new(SkipList::new());
    for i in 0..50u8 {
        list.insert(0, &[i], 1, &[i]);
    }
    let mut pos = Position::new(Arc::clone(&list));
    assert!(pos.entry().is_none());
    pos.seek_last();
    let mut seen = Vec::new();
    while let Some(e) = pos.entry() {
        seen.push(e.value()[0]);
        pos.prev();
    }
    assert_eq!(seen, (0..50u8).rev().collect::<Vec<_>>());
    pos.seek_ge(&Probe {
        keyspace: 0,
        user: &[48],
        trailer: u64::MAX,
    });
    pos.next();
    assert_eq!(pos.entry().unwrap().value(), [49]);
    pos.next();
    assert!(pos.entry().is_none());
    // The position keeps the list alive after every other owner is gone.
    pos.seek_le(&Probe {
        keyspace: 0,
        user: &[10],
        trailer: 0,
    });
    drop(list);
    assert_eq!(pos.entry().unwrap().value(), [10]);
}

/// The point index agrees with a search: for every key, `newest` gives the version a
/// seek to the key's first version gives, while a writer adds newer versions (in
/// scattered order, several keyspaces) and a reader checks every key it has seen
/// finished. Keys past the index's room make it incomplete but never wrong.
#[test]
fn newest_agrees_with_a_search_while_a_writer_inserts() {
    let list = Arc::new(SkipList::with_options(false, 300));
    let keys: u32 = if cfg!(miri) { 60 } else { 2_000 };
    let rounds: u64 = if cfg!(miri) { 2 } else { 4 };
    let finished = AtomicUsize::new(0);
    let newest_of = |key: &[u8], ks: u32| {
        let hash = super::super::filter::key_hash(key);
        match list.newest(ks, key, hash) {
            Newest::Found(e) => Some(e.trailer()),
            Newest::Absent => None,
            Newest::Unknown => list
                .seek_ge(&Probe {
                    keyspace: ks,
                    user: key,
                    trailer: u64::MAX,
                })
                .filter(|e| e.keyspace() == ks && e.user_key() == key)
                .map(|e| e.trailer()),
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=rounds {
                for i in 0..keys {
                    let k = (u64::from(i) * 7919 % u64::from(keys)) as u32;
                    let key = format!("{k:06}");
                    list.insert(k % 3, key.as_bytes(), round << 8 | 1, b"v");
                }
                finished.store(round as usize, Mo::Release);
            }
        });
        s.spawn(|| loop {
            let done = finished.load(Mo::Acquire) as u64;
            for k in 0..keys {
                let key = format!("{k:06}");
                let got = newest_of(key.as_bytes(), k % 3);
                // Rounds finished before the load are seen; a later one may be too.
                let seen = got.map_or(0, |t| t >> 8);
                assert!(seen >= done, "key {k}: version {seen} after round {done}");
                assert_eq!(newest_of(key.as_bytes(), (k + 1) % 3), None, "key {k}");
            }
            if done == rounds {
                break;
            }
        });
    });
    // An index for 300 keys has 512 slots: 2,000 keys overflow it, 60 do not.
    let indexed = (0..keys)
        .filter(|k| {
            let key = format!("{k:06}");
            let hash = super::super::filter::key_hash(key.as_bytes());
            matches!(list.newest(k % 3, key.as_bytes(), hash), Newest::Found(_))
        })
        .count();
    if cfg!(miri) {
        assert!(
            list.point.get().unwrap().complete() && indexed == keys as usize,
            "{indexed}"
        );
    } else {
        assert!(
            !list.point.get().unwrap().complete(),
            "2,000 keys overflow 512 slots"
        );
        assert!((345..=384).contains(&indexed), "{indexed} keys indexed");
    }
}

/// Seeks racing inserts right beside their target land on the target: a node linked
/// just before it while the seek descends is never returned in its place.
#[test]
fn seeks_beside_concurrent_inserts_land_on_their_target() {
    let list = Arc::new(SkipList::new());
    let n: u32 = if cfg!(miri) { 100 } else { 200_000 };
    // Targets at even keys; the writer fills in the odd keys just before each.
    for k in (0..n).step_by(2) {
        list.insert(0, format!("{k:08}").as_bytes(), 1, b"target");
    }
    let done = AtomicUsize::new(0);
    let misses = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in (1..n).step_by(2) {
                list.insert(0, format!("{k:08}").as_bytes(), 1, b"filler");
            }
            done.store(1, Mo::Release);
        });
        s.spawn(|| {
            let mut k = 0u32;
            while done.load(Mo::Acquire) == 0 {
                // Follow the writer closely: it inserts in ascending order.
                let target = (list.len() as u32 * 2).saturating_sub(n).min(n - 2) & !1;
                let last = (target + 6).min(n - 2);
                k = if k < target || k >= last {
                    target
                } else {
                    k + 2
                };
                let key = format!("{k:08}").into_bytes();
                let probe = Probe {
                    keyspace: 0,
                    user: &key,
                    trailer: u64::MAX,
                };
                let ge = list.seek_ge(&probe).map(|e| e.user_key().to_vec());
                let le_probe = Probe {
                    trailer: 0,
                    ..probe
                };
                let le = list.seek_le(&le_probe).map(|e| e.user_key().to_vec());
                if ge.as_deref() != Some(&key[..]) || le.as_deref() != Some(&key[..]) {
                    misses.fetch_add(1, Mo::Relaxed);
                }
            }
        });
    });
    assert_eq!(misses.load(Mo::Relaxed), 0);
}

/// Readers walking both ways while a writer inserts see a sorted sequence that holds
/// every entry inserted before the walk began.
#[test]
fn readers_see_sorted_complete_prefixes_while_a_writer_inserts() {
    readers_beside_a_writer(|list, keys| {
        for key in keys {
            list.insert(0, key.as_bytes(), 1, key.as_bytes());
        }
    });
}

#[test]
fn readers_see_sorted_complete_prefixes_while_groups_are_inserted() {
    // Groups of 25 keys in key order, as the write path gives them: alternately through
    // phase 1's side-by-side searches and through the finger alone (dense).
    readers_beside_a_writer(|list, keys| {
        for (n, chunk) in keys.chunks(25).enumerate() {
            let mut chunk = chunk.to_vec();
            chunk.sort();
            let group: Vec<NewEntry<'_>> = chunk
                .iter()
                .map(|key| NewEntry {
                    keyspace: 0,
                    user: key.as_bytes(),
                    trailer: 1,
                    value: key.as_bytes(),
                    user_hash: crate::memtable::filter::key_hash(key.as_bytes()),
                })
                .collect();
            list.insert_group_with(&group, if n % 2 == 0 { 0 } else { usize::MAX });
        }
    });
}

/// Runs `write` (which inserts each of the keys it is given once, key and value equal)
/// beside two readers walking the list forward and backward over and over: each walk
/// must be in order, and hold every entry inserted before it began.
fn readers_beside_a_writer(write: impl FnOnce(&SkipList, &[String]) + Send) {
    let list = Arc::new(SkipList::new());
    let n: u32 = if cfg!(miri) { 200 } else { 20_000 };
    // Each key once, in a scattered order so inserts land everywhere (7919 is a prime
    // that does not divide `n`).
    let keys: Vec<String> = (0..n)
        .map(|i| format!("{:08}", u64::from(i) * 7919 % u64::from(n)))
        .collect();
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            write(&list, &keys);
            done.store(1, Mo::Release);
        });
        for backward in [false, true] {
            let list = &list;
            let done = &done;
            s.spawn(move || loop {
                let finished = done.load(Mo::Acquire) == 1;
                let before = list.len();
                let seen = walk(list, backward);
                assert!(seen.len() >= before);
                assert!(seen.windows(2).all(|w| w[0].1 < w[1].1));
                for (_, key, value) in &seen {
                    assert_eq!(key[..8], value[..]);
                }
                if finished {
                    assert_eq!(seen.len(), n as usize);
                    break;
                }
            });
        }
    });
}
