// Command cairn-ordered-peers-go runs the workloads of Cairn's peer suite
// (crates/ordered-peers/README.md, "Workloads") on a Go store — pebble, badger or bbolt — and prints
// one JSON row per workload on stdout. Progress and errors go to stderr; any error
// (including a value of the wrong size or a key not found) exits non-zero.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// opts are the command-line options.
type opts struct {
	store      string
	dir        string
	num        uint64
	threads    int
	batch      int
	valueSize  int
	reads      int64
	seed       uint64
	cacheMB    int
	workloads  string
	large      bool
	largeSizes string
	largeBytes uint64
	settle     int
}

func parseFlags() opts {
	var o opts
	flag.StringVar(&o.store, "store", "", "pebble, badger or bbolt")
	flag.StringVar(&o.dir, "dir", "", "scratch directory (subdirectories are created and removed in it)")
	flag.Uint64Var(&o.num, "num", 1000000, "keys (N)")
	flag.IntVar(&o.threads, "threads", 1, "threads (goroutines) per workload")
	flag.IntVar(&o.batch, "batch", 1000, "puts per batch for batched writes")
	flag.IntVar(&o.valueSize, "value-size", 100, "value size in bytes")
	flag.Int64Var(&o.reads, "reads", -1, "gets for readrandom/readwrite* (default --num)")
	flag.Uint64Var(&o.seed, "seed", 1, "RNG seed")
	flag.IntVar(&o.cacheMB, "cache-mb", 64, "block cache in MiB (pebble, badger)")
	flag.StringVar(&o.workloads, "workloads", strings.Join(ordered, ","), "comma-separated workloads (always run in the spec's order)")
	flag.BoolVar(&o.large, "large", false, "run the large-value part instead of the ordered list")
	flag.StringVar(&o.largeSizes, "large-sizes", "4096,65536,1048576", "value sizes of the large-value part")
	flag.Uint64Var(&o.largeBytes, "large-bytes", 256<<20, "bytes written per size in the large-value part")
	flag.IntVar(&o.settle, "settle-seconds", 0, "idle seconds after a write workload before the store's space is measured again (0: not measured again)")
	flag.Parse()
	return o
}

func main() {
	if err := run(parseFlags()); err != nil {
		fmt.Fprintln(os.Stderr, "cairn-ordered-peers-go:", err)
		os.Exit(1)
	}
}

func run(o opts) error {
	info, err := lookupStore(o.store)
	if err != nil {
		return err
	}
	if o.dir == "" {
		return fmt.Errorf("--dir is required")
	}
	if o.num == 0 || o.threads < 1 || o.batch < 1 || o.valueSize < 1 || o.cacheMB < 1 {
		return fmt.Errorf("--num, --threads, --batch, --value-size and --cache-mb must be positive")
	}
	if o.reads < 0 {
		o.reads = int64(o.num)
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	r := &runner{o: o, info: info}
	if o.large {
		return r.runLarge()
	}
	return r.runOrdered()
}

// runner opens fresh stores and prints rows.
type runner struct {
	o    opts
	info storeInfo
}

// fresh opens an empty store in a new subdirectory of --dir; done closes and removes it.
// It first writes every dirty page of the machine out (sync), so the store does not start
// while the kernel is still writing back what an earlier store left behind.
func (r *runner) fresh(sub string) (st store, path string, done func() error, err error) {
	path = filepath.Join(r.o.dir, r.info.name+"-"+sub)
	if err := os.RemoveAll(path); err != nil {
		return nil, "", nil, err
	}
	syscall.Sync()
	st, err = r.info.open(path, r.o.cacheMB)
	if err != nil {
		return nil, "", nil, err
	}
	done = func() error {
		cerr := st.close()
		if err := os.RemoveAll(path); err != nil && cerr == nil {
			cerr = err
		}
		return cerr
	}
	return st, path, done, nil
}

func (r *runner) env(st store, keys uint64, reads uint64, batch, valueSize int) *env {
	return &env{st: st, keys: keys, reads: reads, threads: r.o.threads, batch: batch,
		valueSize: valueSize, values: makeValueBuffer(r.o.seed, valueSize), seed: r.o.seed}
}

// runOrdered runs the selected workloads of the ordered list: fillseq on a fresh
// store, then fillrandom on another fresh store followed by the rest. fillrandom
// always runs when a later workload is selected (unreported if not selected).
func (r *runner) runOrdered() error {
	want := map[string]bool{}
	for _, w := range strings.Split(r.o.workloads, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if workloadIndex(w) < 0 {
			return fmt.Errorf("unknown workload %q (known: %s)", w, strings.Join(ordered, ","))
		}
		want[w] = true
	}
	if want["fillseq"] {
		st, path, done, err := r.fresh("fillseq")
		if err != nil {
			return err
		}
		e := r.env(st, r.o.num, uint64(r.o.reads), r.o.batch, r.o.valueSize)
		out, err := e.fillseq()
		if err == nil {
			err = r.emit(e, out, path)
		}
		if derr := done(); err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
	}
	rest := false
	for _, w := range ordered[1:] {
		rest = rest || want[w]
	}
	if !rest {
		return nil
	}
	st, path, done, err := r.fresh("main")
	if err != nil {
		return err
	}
	err = r.runRest(r.env(st, r.o.num, uint64(r.o.reads), r.o.batch, r.o.valueSize), want, path)
	if derr := done(); err == nil {
		err = derr
	}
	return err
}

func (r *runner) runRest(e *env, want map[string]bool, path string) error {
	steps := []struct {
		name string
		run  func() (outcome, error)
	}{
		{"fillrandom", e.fillrandom},
		{"overwrite", e.overwrite},
		{"readrandom", func() (outcome, error) { return e.readrandom(e.reads) }},
		{"readmissing", func() (outcome, error) { return e.readmissing(e.reads) }},
		{"readseq", func() (outcome, error) { return e.scan(false) }},
		{"readreverse", func() (outcome, error) { return e.scan(true) }},
		{"seekrandom", func() (outcome, error) { return e.seekrandom(e.reads / 10) }},
		{"readwrite95", func() (outcome, error) { return e.readwrite(95) }},
		{"readwrite50", func() (outcome, error) { return e.readwrite(50) }},
		{"putrandom", e.putrandom},
		{"deleterandom", e.deleterandom},
	}
	for _, s := range steps {
		if !want[s.name] && s.name != "fillrandom" {
			continue
		}
		out, err := s.run()
		if err != nil {
			return err
		}
		if !want[s.name] {
			fmt.Fprintf(os.Stderr, "%s %s: run to fill the store (not reported)\n", r.info.name, s.name)
			continue
		}
		if err := r.emit(e, out, path); err != nil {
			return err
		}
	}
	return nil
}

// runLarge: per value size, a fresh store, fillrandom of large_bytes/size keys with
// batches of max(1, min(B, 4 MiB/size)) puts, then readrandom of every key count.
func (r *runner) runLarge() error {
	for _, f := range strings.Split(r.o.largeSizes, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || size < 1 {
			return fmt.Errorf("bad --large-sizes entry %q", f)
		}
		n := r.o.largeBytes / uint64(size)
		if n == 0 {
			return fmt.Errorf("--large-bytes %d is less than one value of %d bytes", r.o.largeBytes, size)
		}
		batch := max(1, min(r.o.batch, (4<<20)/size))
		st, path, done, err := r.fresh(fmt.Sprintf("large-%d", size))
		if err != nil {
			return err
		}
		e := r.env(st, n, n, batch, size)
		out, err := e.fillrandom()
		if err == nil {
			err = r.emit(e, out, path)
		}
		if err == nil {
			out, err = e.readrandom(n)
		}
		if err == nil {
			err = r.emit(e, out, path)
		}
		if derr := done(); err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// row is one JSON output line; the field order is the spec's.
type row struct {
	Store      string   `json:"store"`
	Config     string   `json:"config"`
	Durability string   `json:"durability"`
	Workload   string   `json:"workload"`
	Threads    int      `json:"threads"`
	Num        uint64   `json:"num"`
	ValueSize  int      `json:"value_size"`
	Batch      int      `json:"batch"`
	Ops        int64    `json:"ops"`
	Seconds    float64  `json:"seconds"`
	OpsPerSec  float64  `json:"ops_per_sec"`
	MBPerSec   float64  `json:"mb_per_sec"`
	Found      *int64   `json:"found"`
	P50        float64  `json:"p50_us"`
	P99        float64  `json:"p99_us"`
	P999       float64  `json:"p999_us"`
	Max        float64  `json:"max_us"`
	WriteP99   *float64 `json:"write_p99_us"`
	WriteP999  *float64 `json:"write_p999_us"`
	DiskBytes  *int64   `json:"disk_bytes"`
	// Settled is the space after the workload and --settle-seconds of idle time (write
	// workloads only, when --settle-seconds is set).
	Settled *int64 `json:"settled_disk_bytes,omitempty"`
}

// writes reports whether workload changes the store (the rows of the space tables).
func writes(workload string) bool {
	switch workload {
	case "fillseq", "fillrandom", "overwrite", "putrandom", "deleterandom":
		return true
	}
	return false
}

// emit prints the row of a finished workload, measuring the store directory.
func (r *runner) emit(e *env, out outcome, path string) error {
	disk, err := diskBytes(path)
	if err != nil {
		return fmt.Errorf("measuring %s: %w", path, err)
	}
	secs := math.Max(out.seconds, 1e-9)
	rw := row{
		Store: r.info.name, Config: r.info.config(r.o.cacheMB), Durability: r.info.durability,
		Workload: out.name, Threads: e.threads, Num: e.keys, ValueSize: e.valueSize,
		Batch: out.batch, Ops: out.ops, Seconds: round(out.seconds, 6),
		OpsPerSec: round(float64(out.ops)/secs, 1),
		MBPerSec:  round(float64(out.ops)*float64(keyLen+e.valueSize)/secs/1e6, 3),
		Found:     out.found,
		P50:       out.lat.us(50), P99: out.lat.us(99), P999: out.lat.us(99.9), Max: out.lat.maxUs(),
		DiskBytes: &disk,
	}
	if r.o.settle > 0 && writes(out.name) {
		time.Sleep(time.Duration(r.o.settle) * time.Second)
		settled, err := diskBytes(path)
		if err != nil {
			return fmt.Errorf("measuring %s: %w", path, err)
		}
		rw.Settled = &settled
	}
	if strings.HasPrefix(out.name, "readwrite") && out.write.count() > 0 {
		p99, p999 := out.write.us(99), out.write.us(99.9)
		rw.WriteP99, rw.WriteP999 = &p99, &p999
	}
	line, err := json.Marshal(rw)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s %s: %d ops in %.3f s (%.0f ops/s)\n",
		r.info.name, out.name, out.ops, out.seconds, rw.OpsPerSec)
	_, err = fmt.Println(string(line))
	return err
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func round3(x float64) float64 { return round(x, 3) }
