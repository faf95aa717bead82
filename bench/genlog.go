package main

// Synthetic access logs for the benchmarks: the genlog subcommand and the
// logs the ingest rows read.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// genlogMain writes the synthetic log of the replay row: CSV "t,key" with
// times in Unix milliseconds, in time order, over span seconds from
// 2026-01-01; requests per second vary slowly (a sine over the span, ±50%),
// keys are Zipf-distributed (s = 1.1) over keys keys. Deterministic (-seed).
// OUT "-" streams it to standard output (into a compressor: bench/month.sh).
func genlogMain(args []string) error {
	fs := flag.NewFlagSet("genlog", flag.ContinueOnError)
	requests := fs.Int64("requests", 10_000_000, "requests")
	keys := fs.Uint64("keys", 20_000, "distinct keys (Zipf)")
	span := fs.Int64("span", 3600, "seconds")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *requests < 1 || *keys < 2 || *span < 1 {
		return errors.New("usage: bench genlog [-requests N] [-keys K >= 2] [-span S] OUT.csv")
	}
	return genlog(fs.Arg(0), *requests, *keys, *span, *seed)
}

func genlog(path string, requests int64, keys uint64, span int64, seed uint64) error {
	if path == "-" {
		w := bufio.NewWriterSize(os.Stdout, 1<<20)
		if err := writeLog(w, requests, keys, span, seed); err != nil {
			return err
		}
		return w.Flush()
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(path + ".tmp")
	w := bufio.NewWriterSize(f, 1<<20)
	if err := writeLog(w, requests, keys, span, seed); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// writeLog writes genlog's log to w, second by second (memory: one
// second's requests).
func writeLog(w *bufio.Writer, requests int64, keys uint64, span int64, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 17))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(seed, 18)), 1.1, 1, keys-1)
	const t0 = 1767225600000 // 2026-01-01T00:00:00Z, ms
	w.WriteString("t,key\n")
	var written int64
	ms := make([]int64, 0, 1<<16)
	var line []byte
	for s := range span {
		// Requests up to second s+1 follow a ±50% sine around the mean.
		x := float64(s+1) / float64(span)
		cum := func(x float64) float64 { return x - 0.5*(1-cosTurn(x))/(2*math.Pi) }
		n := int64(float64(requests)*cum(x)/cum(1)+0.5) - written
		if s == span-1 {
			n = requests - written
		}
		ms = ms[:0]
		for range n {
			ms = append(ms, rng.Int64N(1000))
		}
		slices.Sort(ms)
		for _, m := range ms {
			line = strconv.AppendInt(line[:0], t0+s*1000+m, 10)
			line = append(line, ',', 'k')
			line = strconv.AppendUint(line, zipf.Uint64(), 10)
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		written += n
	}
	return nil
}

// cosTurn is cos(2πx).
func cosTurn(x float64) float64 { return math.Cos(2 * math.Pi * x) }

// ingestLogs writes (once, into cache) the ingest row's logs: the
// repository's two real Combined logs repeated to at least n lines, plain
// and gzipped, and returns their paths and line count. Each copy is moved
// forward in time to start a second after the one before it ends, so every
// line is a request (a verbatim copy would go back years and be malformed:
// the row would measure the malformed-line path, not the ingest).
func ingestLogs(cache string, n int64) (plain, gz string, lines int64, err error) {
	var logs [][][]byte // per file, its lines (with "\n")
	for _, p := range []string{"antlr_org_20030902/access.log.gz", "elastic_apache_logs/apache_logs.gz"} {
		f, err := os.Open(filepath.Join("configs", "examples", "logs", p))
		if err != nil {
			return "", "", 0, err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return "", "", 0, fmt.Errorf("%s: %w", p, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			return "", "", 0, fmt.Errorf("%s: %w", p, err)
		}
		log := bytes.SplitAfter(b, []byte("\n"))
		if len(log[len(log)-1]) == 0 {
			log = log[:len(log)-1]
		}
		for i, line := range log {
			if !bytes.HasSuffix(line, []byte("\n")) {
				log[i] = append(line, '\n')
			}
		}
		logs = append(logs, log)
		lines += int64(len(log))
	}
	per := lines
	reps := (n + per - 1) / per
	lines = per * reps
	plain = filepath.Join(cache, fmt.Sprintf("combined-continuous-%d.log", lines))
	gz = plain + ".gz"
	if _, err := os.Stat(gz); err == nil {
		return plain, gz, lines, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", "", 0, err
	}
	fmt.Fprintf(os.Stderr, "bench: generating %s (and .gz)\n", plain)
	pf, err := os.Create(plain)
	if err != nil {
		return "", "", 0, err
	}
	gf, err := os.Create(gz + ".tmp")
	if err != nil {
		pf.Close()
		return "", "", 0, err
	}
	zw := gzip.NewWriter(gf)
	w := bufio.NewWriterSize(io.MultiWriter(pf, zw), 1<<20)
	err = writeContinuous(w, logs, reps)
	for _, e := range []error{w.Flush(), zw.Close(), gf.Close(), pf.Close()} {
		if err == nil {
			err = e
		}
	}
	if err != nil {
		return "", "", 0, err
	}
	return plain, gz, lines, os.Rename(gz+".tmp", gz)
}

// firstLine writes the first line of the log at src to dst (once).
func firstLine(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("%s: %v", src, err)
	}
	return os.WriteFile(dst, line, 0o644)
}

// writeContinuous writes reps copies of the Combined logs, each moved in
// time to start a second after the latest time written before it (the
// zone offsets as logged).
func writeContinuous(w io.Writer, logs [][][]byte, reps int64) error {
	const layout = "02/Jan/2006:15:04:05 -0700"
	stamp := func(line []byte) (i int, t time.Time, err error) {
		i = bytes.IndexByte(line, '[')
		if i < 0 || len(line) < i+2+len(layout) {
			return 0, t, fmt.Errorf("no [time] in %q", line)
		}
		t, err = time.Parse(layout, string(line[i+1:i+1+len(layout)]))
		return i + 1, t, err
	}
	var end time.Time // the latest time written so far
	var buf []byte
	for r := range reps {
		for _, log := range logs {
			_, first, err := stamp(log[0])
			if err != nil {
				return err
			}
			shift := time.Duration(0)
			if r > 0 || !end.IsZero() {
				shift = end.Add(time.Second).Sub(first)
			}
			for _, line := range log {
				i, t, err := stamp(line)
				if err != nil {
					return err
				}
				t = t.Add(shift)
				if t.After(end) {
					end = t
				}
				buf = append(t.AppendFormat(append(buf[:0], line[:i]...), layout), line[i+len(layout):]...)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
