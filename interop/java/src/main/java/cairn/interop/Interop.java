/*
 * Cairn <-> sparkey-java interop harness.
 *
 * What this proves: Sparkey files (.spl log + .spi index) written by sparkey-java
 * (com.spotify.sparkey:sparkey 3.2.5, an independent pure-Java implementation of the
 * Sparkey formats; see docs/spec §13) can be read by Cairn, and files written by Cairn
 * can be read by sparkey-java, with identical live key/value content, working lookups,
 * correct negative lookups and a consistent entry count. The cases cover uncompressed,
 * Snappy and Zstandard logs, values larger than a compression block, empty keys/values,
 * arbitrary binary bytes, overwrites, deletes (including of absent keys), and a
 * 150,000-key index with 32-bit MurmurHash3 hashing.
 *
 * The exchange format between the two sides is a "hex TSV": one live entry per line,
 * `hex(key) TAB hex(value)`, lowercase hex, lines sorted bytewise (same order as
 * `LC_ALL=C sort`). Cairn's `cairn sparkey dump` prints the same format.
 *
 * Subcommands (exit 0 = success, 1 = mismatch or read failure, 2 = usage error):
 *   write <out-dir>                               write the java_* cases (+ .tsv expectations)
 *   read  <file.spi> <file.spl> <expected.tsv> [--hash-size 4|8]
 *                                                 check a pair with sparkey-java's reader
 *   dump  <file.spi> <file.spl>                   print live entries as sorted hex TSV
 *   gen   <out.tsv> <n> <seed> <expected.tsv>     deterministic raw `key TAB value` input
 *                                                 for `cairn sparkey build --format tsv`
 *
 * sparkey-java API used (checked against the 3.2.5 sources jar):
 *   Sparkey.createNew(File, CompressionType, int blockSize) -> SparkeyWriter
 *   SparkeyWriter.put(byte[], byte[]) / delete(byte[]) / setHashType(HashType)
 *     / setHashSeed(int) / writeHash() / close()
 *   Sparkey.openSingleThreadedReader(File) -> SparkeyReader (iterator() yields live
 *     entries only; getAsByteArray(byte[]) looks up; getIndexHeader().getNumEntries())
 * sparkey-java always derives both file names from one base name (x.spi <-> x.spl), so
 * `read` and `dump` insist that the .spl argument is the index's sibling.
 */
package cairn.interop;

import com.spotify.sparkey.CompressionType;
import com.spotify.sparkey.HashType;
import com.spotify.sparkey.IndexHeader;
import com.spotify.sparkey.LogHeader;
import com.spotify.sparkey.Sparkey;
import com.spotify.sparkey.SparkeyReader;
import com.spotify.sparkey.SparkeyWriter;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.BufferedOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

public final class Interop {

  /** Fixed hash seed for the indexes we write, so that runs are repeatable. (The log's
   *  file identifier is still chosen at random by sparkey-java; content is repeatable.) */
  private static final int HASH_SEED = 0x5eed1234;

  private Interop() {}

  /** A check failed: the message names the first mismatch. */
  private static final class Mismatch extends Exception {
    Mismatch(String message) {
      super(message);
    }
  }

  /** Bad command line. */
  private static final class Usage extends Exception {
    Usage(String message) {
      super(message);
    }
  }

  public static void main(String[] args) {
    try {
      if (args.length == 0) {
        throw new Usage("missing subcommand");
      }
      switch (args[0]) {
        case "write" -> {
          expectArgs(args, 2, 2);
          write(new File(args[1]));
        }
        case "read" -> {
          expectArgs(args, 4, 6);
          int hashSize = 0;
          if (args.length > 4) {
            if (args.length != 6 || !args[4].equals("--hash-size")) {
              throw new Usage("unexpected arguments after <expected.tsv>");
            }
            hashSize = Integer.parseInt(args[5]);
          }
          read(new File(args[1]), new File(args[2]), Path.of(args[3]), hashSize);
        }
        case "dump" -> {
          expectArgs(args, 3, 3);
          dump(new File(args[1]), new File(args[2]));
        }
        case "gen" -> {
          expectArgs(args, 5, 5);
          gen(Path.of(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3]), Path.of(args[4]));
        }
        default -> throw new Usage("unknown subcommand '" + args[0] + "'");
      }
    } catch (Usage e) {
      System.err.println("interop: " + e.getMessage());
      System.err.println("usage: Interop write <out-dir>");
      System.err.println("       Interop read <file.spi> <file.spl> <expected.tsv> [--hash-size 4|8]");
      System.err.println("       Interop dump <file.spi> <file.spl>");
      System.err.println("       Interop gen <out.tsv> <n> <seed> <expected.tsv>");
      System.exit(2);
    } catch (NumberFormatException e) {
      System.err.println("interop: bad number: " + e.getMessage());
      System.exit(2);
    } catch (Mismatch e) {
      System.err.println(args[0] + " FAIL: " + e.getMessage());
      System.exit(1);
    } catch (Exception e) {
      // Typically sparkey-java rejecting a file (IOException / RuntimeException).
      System.err.println(args[0] + " FAIL: " + e);
      e.printStackTrace(System.err);
      System.exit(1);
    }
  }

  private static void expectArgs(String[] args, int min, int max) throws Usage {
    if (args.length < min || args.length > max) {
      throw new Usage("wrong number of arguments for '" + args[0] + "'");
    }
  }

  // ---------------------------------------------------------------------------------
  // write: sparkey-java -> files (+ expectations)
  // ---------------------------------------------------------------------------------

  private static void write(File outDir) throws IOException {
    Files.createDirectories(outDir.toPath());
    writeMixedCase(outDir, "java_none", CompressionType.NONE, 0, 1L);
    writeMixedCase(outDir, "java_snappy", CompressionType.SNAPPY, 1024, 2L);
    writeMixedCase(outDir, "java_zstd", CompressionType.ZSTD, 4096, 3L);
    writeBigHash32Case(outDir, "java_hash32_big", 150_000, 4L);
  }

  /**
   * The live-state model of a case: hex(key) -> value, kept in sync with every put and
   * delete sent to the writer. Its final state is the expectation file.
   */
  private static final class ModelWriter {
    final SparkeyWriter writer;
    final Map<String, byte[]> live = new TreeMap<>();
    long puts;
    long deletes;

    ModelWriter(SparkeyWriter writer) {
      this.writer = writer;
    }

    void put(byte[] key, byte[] value) throws IOException {
      writer.put(key, value);
      live.put(hex(key), value);
      puts++;
    }

    void delete(byte[] key) throws IOException {
      writer.delete(key);
      live.remove(hex(key));
      deletes++;
    }
  }

  /**
   * ~2,000 initial keys plus 600 random mutations (overwrites, deletes of live and absent
   * keys, re-puts of deleted keys, new keys), binary keys and values of varied sizes,
   * including the empty key, empty values, all 256 byte values, values around the block
   * size and a 5,000-byte value (larger than either block size used).
   */
  private static void writeMixedCase(File dir, String name, CompressionType compression,
                                     int blockSize, long seed) throws IOException {
    Random rnd = new Random(seed);
    File base = new File(dir, name + ".spl");
    SparkeyWriter writer = Sparkey.createNew(base, compression, blockSize);
    ModelWriter m = new ModelWriter(writer);

    // Distinct initial keys, with a few hand-picked edge cases first.
    List<byte[]> keys = new ArrayList<>();
    Set<String> used = new HashSet<>();
    byte[] allBytes = new byte[256];
    for (int i = 0; i < 256; i++) {
      allBytes[i] = (byte) i;
    }
    for (byte[] k : List.of(new byte[0], new byte[] {0}, new byte[] {(byte) 0xff},
        new byte[] {0, 0, 0, 0}, allBytes)) {
      keys.add(k);
      used.add(hex(k));
    }
    while (keys.size() < 2000) {
      byte[] k = randomBytes(rnd, randomKeyLength(rnd));
      if (used.add(hex(k))) {
        keys.add(k);
      }
    }

    // Initial puts. Special values go to the first keys; the rest are random.
    int bs = blockSize > 0 ? blockSize : 1024;
    List<byte[]> special = List.of(new byte[0], allBytes, randomBytes(rnd, 5000),
        randomBytes(rnd, bs - 3), randomBytes(rnd, bs), randomBytes(rnd, bs + 1),
        new byte[3000] /* all zero: compresses very well */);
    for (int i = 0; i < keys.size(); i++) {
      m.put(keys.get(i), i < special.size() ? special.get(i) : randomValue(rnd));
    }

    // Random mutations.
    List<byte[]> deleted = new ArrayList<>();
    for (int op = 0; op < 600; op++) {
      int r = rnd.nextInt(100);
      byte[] k = keys.get(rnd.nextInt(keys.size()));
      if (r < 40) {                                   // overwrite (maybe a deleted key)
        m.put(k, rnd.nextInt(5) == 0 ? new byte[0] : randomValue(rnd));
      } else if (r < 65) {                            // delete a key (live or not)
        m.delete(k);
        deleted.add(k);
      } else if (r < 75) {                            // delete a key that never existed
        byte[] absent = randomBytes(rnd, 1 + rnd.nextInt(30));
        if (!used.contains(hex(absent))) {
          m.delete(absent);
        }
      } else if (r < 90 && !deleted.isEmpty()) {      // resurrect a deleted key
        m.put(deleted.get(rnd.nextInt(deleted.size())), randomValue(rnd));
      } else {                                        // brand-new key
        byte[] nk = randomBytes(rnd, randomKeyLength(rnd));
        if (used.add(hex(nk))) {
          keys.add(nk);
          m.put(nk, randomValue(rnd));
        }
      }
    }
    // Deterministic tail: a key overwritten twice in a row, then put+delete of another,
    // and a big value written last (ends the log with a block-spanning entry).
    m.put(keys.get(10), randomValue(rnd));
    m.put(keys.get(10), randomValue(rnd));
    m.put(keys.get(11), randomValue(rnd));
    m.delete(keys.get(11));
    m.put(keys.get(12), randomBytes(rnd, 5000));

    finish(dir, name, m, null);
  }

  /** 150,000 distinct binary keys, all live, index forced to 32-bit MurmurHash3. */
  private static void writeBigHash32Case(File dir, String name, int n, long seed) throws IOException {
    Random rnd = new Random(seed);
    SparkeyWriter writer = Sparkey.createNew(new File(dir, name + ".spl"), CompressionType.NONE, 0);
    ModelWriter m = new ModelWriter(writer);
    Set<String> used = new HashSet<>();
    while (m.live.size() < n) {
      byte[] k = randomBytes(rnd, 4 + rnd.nextInt(17));
      if (used.add(hex(k))) {
        m.put(k, randomBytes(rnd, rnd.nextInt(41)));
      }
    }
    finish(dir, name, m, HashType.HASH_32_BITS);
  }

  /** Builds the index (fixed seed, optional hash type), closes, writes <name>.tsv. */
  private static void finish(File dir, String name, ModelWriter m, HashType hashType) throws IOException {
    if (hashType != null) {
      m.writer.setHashType(hashType);
    }
    m.writer.setHashSeed(HASH_SEED);
    m.writer.writeHash();   // flushes the log, then builds <name>.spi
    m.writer.close();

    Map<String, String> expected = new TreeMap<>();
    for (Map.Entry<String, byte[]> e : m.live.entrySet()) {
      expected.put(e.getKey(), hex(e.getValue()));
    }
    writeHexTsv(dir.toPath().resolve(name + ".tsv"), expected);

    IndexHeader ih = Sparkey.getIndexHeader(new File(dir, name + ".spi"));
    System.out.printf("write %s: %d puts, %d deletes, %d live keys; %s%n",
        name, m.puts, m.deletes, expected.size(), describe(Sparkey.getLogHeader(new File(dir, name + ".spl")), ih));
  }

  private static int randomKeyLength(Random rnd) {
    int r = rnd.nextInt(100);
    if (r < 70) {
      return 1 + rnd.nextInt(16);
    } else if (r < 95) {
      return 17 + rnd.nextInt(84);
    }
    return 101 + rnd.nextInt(300);
  }

  private static byte[] randomValue(Random rnd) {
    int r = rnd.nextInt(100);
    int len;
    if (r < 10) {
      len = 0;
    } else if (r < 70) {
      len = 1 + rnd.nextInt(64);
    } else if (r < 95) {
      len = 65 + rnd.nextInt(836);
    } else {
      len = 901 + rnd.nextInt(2100);
    }
    return randomBytes(rnd, len);
  }

  private static byte[] randomBytes(Random rnd, int len) {
    byte[] b = new byte[len];
    rnd.nextBytes(b);
    return b;
  }

  // ---------------------------------------------------------------------------------
  // read / dump: files -> sparkey-java reader
  // ---------------------------------------------------------------------------------

  /** Opens with sparkey-java, after checking the .spl is where sparkey-java will look. */
  private static SparkeyReader open(File spi, File spl) throws IOException, Mismatch {
    File derivedLog = Sparkey.getLogFile(spi);
    if (!spi.getName().endsWith(".spi")) {
      throw new Mismatch("index file name must end in .spi: " + spi);
    }
    if (!derivedLog.getCanonicalFile().equals(spl.getCanonicalFile())) {
      throw new Mismatch("sparkey-java derives the log name from the index name, so the log "
          + "must be " + derivedLog + " for index " + spi + "; got " + spl);
    }
    if (!spi.isFile() || !spl.isFile()) {
      throw new Mismatch("missing file: " + (spi.isFile() ? spl : spi));
    }
    return Sparkey.openSingleThreadedReader(spi);
  }

  private static void read(File spi, File spl, Path expectedTsv, int wantHashSize)
      throws IOException, Mismatch {
    Map<String, String> expected = readHexTsv(expectedTsv);
    try (SparkeyReader reader = open(spi, spl)) {
      // (a) Iteration yields exactly the expected live set (order may differ).
      Set<String> seen = new HashSet<>();
      for (SparkeyReader.Entry e : reader) {
        if (e.getType() != SparkeyReader.Type.PUT) {
          throw new Mismatch("iteration: yielded a " + e.getType() + " entry");
        }
        String k = hex(e.getKey());
        String v = hex(e.getValue());
        if (!seen.add(k)) {
          throw new Mismatch("iteration: key " + abbrev(k) + " yielded twice");
        }
        String want = expected.get(k);
        if (want == null) {
          throw new Mismatch("iteration: unexpected key " + abbrev(k) + " (value " + abbrev(v) + ")");
        }
        if (!want.equals(v)) {
          throw new Mismatch("iteration: key " + abbrev(k) + " has value " + abbrev(v)
              + ", expected " + abbrev(want));
        }
      }
      for (String k : expected.keySet()) {
        if (!seen.contains(k)) {
          throw new Mismatch("iteration: expected key " + abbrev(k) + " was not yielded");
        }
      }

      // (b) Every expected key is found by lookup, with the right value.
      for (Map.Entry<String, String> e : expected.entrySet()) {
        byte[] got = reader.getAsByteArray(unhex(e.getKey()));
        if (got == null) {
          throw new Mismatch("lookup: key " + abbrev(e.getKey()) + " not found");
        }
        String v = hex(got);
        if (!v.equals(e.getValue())) {
          throw new Mismatch("lookup: key " + abbrev(e.getKey()) + " returned " + abbrev(v)
              + ", expected " + abbrev(e.getValue()));
        }
      }

      // (c) Absent keys are not found: random keys plus near misses of present keys.
      List<byte[]> absent = absentKeys(expected, 300);
      for (byte[] k : absent) {
        if (reader.getAsByteArray(k) != null) {
          throw new Mismatch("lookup: absent key " + abbrev(hex(k)) + " was found");
        }
      }

      // (d) The index's entry count matches.
      IndexHeader ih = reader.getIndexHeader();
      if (ih.getNumEntries() != expected.size()) {
        throw new Mismatch("numEntries is " + ih.getNumEntries() + ", expected " + expected.size());
      }
      if (wantHashSize != 0 && ih.getHashSize() != wantHashSize) {
        throw new Mismatch("index hash size is " + ih.getHashSize() + " bytes, expected " + wantHashSize);
      }

      System.out.printf("read OK %s: %d entries iterated, %d lookups, %d absent keys not found, "
              + "numEntries=%d; %s%n", spi.getName(), seen.size(), expected.size(), absent.size(),
          ih.getNumEntries(), describe(reader.getLogHeader(), ih));
    }
  }

  /** Deterministic keys that are not in {@code expected}: about half random, half near misses. */
  private static List<byte[]> absentKeys(Map<String, String> expected, int count) {
    Random rnd = new Random(0xab5e47L);
    List<String> present = new ArrayList<>(expected.keySet());
    List<byte[]> out = new ArrayList<>();
    int attempts = 0;
    while (out.size() < count && attempts++ < count * 20) {
      byte[] k;
      if (present.isEmpty() || out.size() % 2 == 0) {
        k = randomBytes(rnd, rnd.nextInt(41));
      } else {
        byte[] p = unhex(present.get(rnd.nextInt(present.size())));
        switch (rnd.nextInt(3)) {
          case 0 -> {                                   // one extra byte
            k = java.util.Arrays.copyOf(p, p.length + 1);
            k[p.length] = (byte) rnd.nextInt(256);
          }
          case 1 -> k = java.util.Arrays.copyOf(p, Math.max(0, p.length - 1));  // one byte short
          default -> {                                  // one bit flipped
            k = p.clone();
            if (k.length > 0) {
              k[rnd.nextInt(k.length)] ^= 1;
            }
          }
        }
      }
      if (!expected.containsKey(hex(k))) {
        out.add(k);
      }
    }
    return out;
  }

  private static void dump(File spi, File spl) throws IOException, Mismatch {
    List<String> lines = new ArrayList<>();
    try (SparkeyReader reader = open(spi, spl)) {
      for (SparkeyReader.Entry e : reader) {
        lines.add(hex(e.getKey()) + "\t" + hex(e.getValue()));
      }
    }
    lines.sort(null);  // String order == byte order here (ASCII only): same as LC_ALL=C sort
    PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false,
        StandardCharsets.US_ASCII);
    for (String line : lines) {
      out.print(line);
      out.print('\n');
    }
    out.flush();
  }

  private static String describe(LogHeader lh, IndexHeader ih) {
    return String.format("log: %s block=%d puts=%d deletes=%d maxEntriesPerBlock=%d; "
            + "index: hash=%d-bit addr=%dB capacity=%d entryBlockBits=%d collisions=%d",
        lh.getCompressionType(), lh.getCompressionBlockSize(), lh.getNumPuts(), lh.getNumDeletes(),
        lh.getMaxEntriesPerBlock(), ih.getHashSize() * 8, ih.getAddressSize(), ih.getHashCapacity(),
        ih.getEntryBlockBits(), ih.getHashCollisions());
  }

  // ---------------------------------------------------------------------------------
  // gen: raw TSV input for `cairn sparkey build --format tsv`
  // ---------------------------------------------------------------------------------

  /**
   * Writes n lines `key TAB value` (printable ASCII 0x20-0x7e, so never TAB/CR/LF; keys
   * distinct and non-empty; ~10% empty values, ~2% values of 1,000-6,000 bytes that span
   * 1 KiB and 4 KiB compression blocks) and the matching sorted hex expectation.
   */
  private static void gen(Path out, int n, long seed, Path expectedOut) throws IOException {
    Random rnd = new Random(seed);
    Map<String, String> expected = new TreeMap<>();
    Set<String> keys = new HashSet<>();
    try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.US_ASCII)) {
      while (keys.size() < n) {
        String k = printable(rnd, 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? 120 : 24));
        if (!keys.add(k)) {
          continue;
        }
        int r = rnd.nextInt(100);
        int vlen = r < 10 ? 0 : r < 98 ? 1 + rnd.nextInt(80) : 1000 + rnd.nextInt(5001);
        String v = printable(rnd, vlen);
        w.write(k);
        w.write('\t');
        w.write(v);
        w.write('\n');
        expected.put(hex(k.getBytes(StandardCharsets.US_ASCII)), hex(v.getBytes(StandardCharsets.US_ASCII)));
      }
    }
    writeHexTsv(expectedOut, expected);
    System.out.printf("gen %s: %d lines (seed %d)%n", out, n, seed);
  }

  private static String printable(Random rnd, int len) {
    char[] c = new char[len];
    for (int i = 0; i < len; i++) {
      c[i] = (char) (0x20 + rnd.nextInt(0x7f - 0x20));
    }
    return new String(c);
  }

  // ---------------------------------------------------------------------------------
  // Hex TSV helpers
  // ---------------------------------------------------------------------------------

  private static void writeHexTsv(Path path, Map<String, String> sortedByKey) throws IOException {
    // Keys are distinct and TAB (0x09) sorts below every hex digit, so key order equals
    // the bytewise line order that `LC_ALL=C sort` produces.
    try (OutputStream os = new BufferedOutputStream(new FileOutputStream(path.toFile()), 1 << 16)) {
      for (Map.Entry<String, String> e : sortedByKey.entrySet()) {
        os.write((e.getKey() + "\t" + e.getValue() + "\n").getBytes(StandardCharsets.US_ASCII));
      }
    }
  }

  private static Map<String, String> readHexTsv(Path path) throws IOException, Mismatch {
    Map<String, String> m = new LinkedHashMap<>();
    try (BufferedReader r = Files.newBufferedReader(path, StandardCharsets.US_ASCII)) {
      String line;
      int lineNo = 0;
      while ((line = r.readLine()) != null) {
        lineNo++;
        int tab = line.indexOf('\t');
        if (tab < 0 || line.indexOf('\t', tab + 1) >= 0) {
          throw new Mismatch(path + ":" + lineNo + ": expected exactly one TAB");
        }
        String k = line.substring(0, tab);
        String v = line.substring(tab + 1);
        if (!isHex(k) || !isHex(v)) {
          throw new Mismatch(path + ":" + lineNo + ": not lowercase even-length hex");
        }
        if (m.put(k, v) != null) {
          throw new Mismatch(path + ":" + lineNo + ": duplicate key " + abbrev(k));
        }
      }
    }
    return m;
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  static String hex(byte[] b) {
    char[] c = new char[b.length * 2];
    for (int i = 0; i < b.length; i++) {
      c[2 * i] = HEX[(b[i] >> 4) & 0xf];
      c[2 * i + 1] = HEX[b[i] & 0xf];
    }
    return new String(c);
  }

  static byte[] unhex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s, 2 * i, 2 * i + 2, 16);
    }
    return b;
  }

  private static boolean isHex(String s) {
    if (s.length() % 2 != 0) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  /** Hex shortened for messages, with the byte length. */
  private static String abbrev(String hex) {
    String len = "(" + hex.length() / 2 + " B)";
    return hex.length() <= 48 ? "'" + hex + "'" + len : "'" + hex.substring(0, 48) + "...'" + len;
  }
}
