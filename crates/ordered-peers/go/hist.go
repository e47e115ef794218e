package main

// Latency histograms: one per thread (no sharing while measuring), merged at the end
// of a workload. Values are nanoseconds; rows report microseconds.

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// hist is an HDR histogram (1 ns .. 1 hour, 3 significant digits) plus the exact max.
type hist struct {
	h   *hdr.Histogram
	max int64
}

func newHist() *hist {
	return &hist{h: hdr.New(1, int64(time.Hour), 3)}
}

func (h *hist) record(ns int64) {
	if ns < 1 {
		ns = 1
	}
	if ns > h.max {
		h.max = ns
	}
	if ns > int64(time.Hour) {
		ns = int64(time.Hour) // saturate; max keeps the truth
	}
	_ = h.h.RecordValue(ns)
}

func (h *hist) merge(o *hist) {
	h.h.Merge(o.h)
	if o.max > h.max {
		h.max = o.max
	}
}

func (h *hist) count() int64 { return h.h.TotalCount() }

// us returns the value at quantile q (0..100) in microseconds. HDR reports the top
// of the value's bucket, which can exceed the exact max: it is capped there.
func (h *hist) us(q float64) float64 {
	return round3(float64(min(h.h.ValueAtQuantile(q), h.max)) / 1e3)
}

func (h *hist) maxUs() float64 { return round3(float64(h.max) / 1e3) }

// clock implements db_bench-style sampling: each sample is the time since the
// previous sample of the same thread (or since the thread started).
type clock struct {
	last time.Time
}

func startClock() clock { return clock{last: time.Now()} }

// tick returns the nanoseconds since the previous tick and restarts the interval.
func (c *clock) tick() int64 {
	now := time.Now()
	d := now.Sub(c.last).Nanoseconds()
	c.last = now
	return d
}
