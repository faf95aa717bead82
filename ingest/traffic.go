package ingest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// secondNs is one second in nanoseconds.
const secondNs = int64(1_000_000_000)

// maxUnixNs is the last second whose nanoseconds fit in an int64 (2262).
const maxUnixS = (1<<63 - 1) / secondNs

// Options say how a log becomes Traffic. The zero value keys by ip with no
// rules.
type Options struct {
	Reader    ReaderOptions
	Key       []Field // the rate-limit key: fields joined by a space; default [ip]
	PathDepth int     // path segments kept by path_prefix; default 1
	Rules     []Rule
}

// Key is one rate-limit key of a log and its aggregates.
type Key struct {
	Name     string // the key's fields joined by a space (valid UTF-8)
	Requests int64
	ByStage  [4]int64    // requests per label, indexed by model.Stage (NoStage = legit)
	Class    model.Class // the label of most of its requests (abusive on a tie)
	Stage    model.Stage // with Class
	Rule     string      // the rule that labelled most of its abusive requests, if any
}

// Mixed reports whether the key's requests carry more than one label.
func (k *Key) Mixed() bool {
	n := 0
	for _, c := range k.ByStage {
		if c > 0 {
			n++
		}
	}
	return n > 1
}

// Traffic is a log compiled for simulation: every request's key, time and
// label, grouped by key with times sorted. Keys are ordered by requests
// (descending), then name. It is immutable once built and safe to share.
type Traffic struct {
	Source    string // the log file
	Format    Format
	StartUnix int64 // Unix seconds (UTC) of the first request's second: time 0
	DurationS int   // seconds from time 0 to the end of the last request's second
	SubSecond bool  // the log had sub-second times; Realise does not spread them
	Keys      []Key
	Stats     Stats

	offsets []int64       // key i's requests are [offsets[i], offsets[i+1])
	times   []int64       // ns since StartUnix; whole seconds unless SubSecond
	labels  []model.Stage // per request, NoStage = legit
}

// Stats describe the reading of a log.
type Stats struct {
	Lines       int64 // lines read, header and blank lines included
	Requests    int64
	Malformed   int64
	Samples     []LineError // the first malformed lines
	InvalidUTF8 int64       // accepted lines that are not valid UTF-8
	OutOfOrder  int64       // requests earlier than one before them (sorted anyway)
	MaxBackS    int64       // the largest step back in time, s
	FirstBack   int64       // line of the first out-of-order request
	Gzipped     bool
	// LimitReqStatus counts the requests by the nginx $limit_req_status
	// their lines log (Record.LimitReqStatus); nil when no line logs one.
	LimitReqStatus map[string]int64
}

// Open opens a log file for NewReader, with errors that name it.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &yamlx.Error{File: path, Msg: plainErr(err)}
	}
	if st.IsDir() {
		return nil, &yamlx.Error{File: path, Msg: "is a directory, expected a log file"}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &yamlx.Error{File: path, Msg: plainErr(err)}
	}
	return f, nil
}

func plainErr(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// Load reads and compiles the log at path. Errors are *yamlx.Error naming
// the file (and line where there is one).
func Load(ctx context.Context, path string, opt Options) (*Traffic, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Build(ctx, f, opt)
	if err != nil {
		return nil, yamlx.InFile(err, path)
	}
	t.Source = path
	return t, nil
}

// builder accumulates requests while a log is read.
type builder struct {
	opt      Options
	index    map[string]int32
	names    []string
	keyBits  []uint32 // per key: bit i set when rule i's Keys lists it
	keyPrec  []uint8  // per key: 1 + first key-scope rule that marked it, 0 none
	times    []int64  // Unix ns
	keys     []int32
	reqPrec  []uint8 // per request: 1 + first request-scope rule (0 = label column), 255 none
	reqStage []model.Stage
	rateBits []uint16 // per request: bit j set when rate rule j's other conditions hold
	rateRule []int    // rule index of rate rule j
	match    []*matcher
	scratch  []byte
	subSec   bool
	maxT     int64
	stats    Stats
}

const noPrec = 255

// MaxRules bounds the rules of one log (rule precedence is stored in a byte).
const MaxRules = 200

// MaxRateRules bounds rules with a rate condition.
const MaxRateRules = 16

// Build reads a log from r and compiles it. Malformed lines are counted in
// Stats (an error with ReaderOptions.Strict); a log without a valid request
// is an error.
func Build(ctx context.Context, r io.Reader, opt Options) (*Traffic, error) {
	if len(opt.Key) == 0 {
		opt.Key = []Field{FieldIP}
	}
	if opt.PathDepth <= 0 {
		opt.PathDepth = 1
	}
	if len(opt.Rules) > MaxRules {
		return nil, fmt.Errorf("at most %d rules, got %d", MaxRules, len(opt.Rules))
	}
	b := &builder{opt: opt, index: map[string]int32{}, maxT: -1 << 63}
	for i := range opt.Rules {
		if err := opt.Rules[i].Validate(); err != nil {
			return nil, err
		}
		if opt.Rules[i].Rate != nil {
			b.rateRule = append(b.rateRule, i)
		}
		b.match = append(b.match, newMatcher(&opt.Rules[i]))
	}
	if len(b.rateRule) > MaxRateRules {
		return nil, fmt.Errorf("at most %d rules with a rate condition, got %d", MaxRateRules, len(b.rateRule))
	}
	rd, err := newSource(r, opt.Reader)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	for rd.Scan() {
		if err := b.add(rd.Record()); err != nil {
			if !rd.reject(err.Error()) {
				break
			}
		}
		if len(b.times)&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rd.stats(&b.stats)
	if err := rd.Err(); err != nil {
		var le *LineError
		if errorsAs(err, &le) {
			return nil, &yamlx.Error{Line: int(le.Line), Msg: le.Msg + ": " + le.Excerpt + " (--strict)"}
		}
		return nil, err
	}
	if len(b.times) == 0 {
		msg := "no requests in the log"
		if b.stats.Malformed > 0 {
			s := b.stats.Samples[0]
			msg = fmt.Sprintf("no valid requests: %d malformed lines (first at line %d: %s: %s)", b.stats.Malformed, s.Line, s.Msg, s.Excerpt)
		}
		return nil, &yamlx.Error{Msg: msg}
	}
	t := b.finish()
	t.Format = rd.Format()
	return t, nil
}

// add records one request.
func (b *builder) add(rec *Record) error {
	if rec.Time < 0 || rec.Time > maxUnixS-1 {
		return fmt.Errorf("time %d is outside 1970..2262", rec.Time)
	}
	rp, st := uint8(noPrec), model.NoStage
	if rec.Label != nil {
		s, ok := labelColumnStage(rec.Label)
		if !ok {
			return fmt.Errorf("label %q is not legit, design, code or none", excerptString(rec.Label))
		}
		if s != model.NoStage {
			rp, st = 0, s
		}
	}
	// Past here the request is accepted: nothing may fail.
	if rec.Trailer != nil {
		if s := rec.LimitReqStatus(); s != "" {
			if b.stats.LimitReqStatus == nil {
				b.stats.LimitReqStatus = map[string]int64{}
			}
			b.stats.LimitReqStatus[s]++
		}
	}
	ns := rec.Time*secondNs + rec.TimeNs
	if rec.TimeNs != 0 {
		b.subSec = true
	}
	if ns < b.maxT {
		if b.stats.OutOfOrder == 0 {
			b.stats.FirstBack = rec.Line
		}
		b.stats.OutOfOrder++
		b.stats.MaxBackS = max(b.stats.MaxBackS, (b.maxT-ns+secondNs-1)/secondNs)
	} else {
		b.maxT = ns
	}
	k := b.key(rec)
	rules := b.opt.Rules
	var rateBits uint16
	for i := range rules {
		r := &rules[i]
		if r.Keys != nil {
			listed := false
			if i < 32 {
				listed = b.keyBits[k]&(1<<i) != 0
			} else {
				listed = r.Keys[b.names[k]]
			}
			if !listed {
				continue
			}
		}
		if !b.match[i].matchRecord(rec) {
			continue
		}
		switch {
		case r.Rate != nil:
			for j, ri := range b.rateRule {
				if ri == i {
					rateBits |= 1 << j
				}
			}
		case r.Scope == ScopeRequest:
			if rp == noPrec {
				rp, st = uint8(i+1), r.Stage
			}
		default:
			if p := uint8(i + 1); b.keyPrec[k] == 0 || p < b.keyPrec[k] {
				b.keyPrec[k] = p
			}
		}
	}
	b.times = append(b.times, ns)
	b.keys = append(b.keys, k)
	if rp != noPrec || b.reqPrec != nil {
		if b.reqPrec == nil {
			b.reqPrec = make([]uint8, len(b.times)-1, cap(b.times))
			b.reqStage = make([]model.Stage, len(b.times)-1, cap(b.times))
			for i := range b.reqPrec {
				b.reqPrec[i] = noPrec
			}
		}
		b.reqPrec = append(b.reqPrec, rp)
		b.reqStage = append(b.reqStage, st)
	}
	if rateBits != 0 || b.rateBits != nil {
		if b.rateBits == nil {
			b.rateBits = make([]uint16, len(b.times)-1, cap(b.times))
		}
		b.rateBits = append(b.rateBits, rateBits)
	}
	return nil
}

func excerptString(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// key interns the record's key and returns its index.
func (b *builder) key(rec *Record) int32 {
	buf := b.scratch[:0]
	for i, f := range b.opt.Key {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = appendField(buf, rec, f, b.opt.PathDepth)
	}
	b.scratch = buf
	if k, ok := b.index[string(buf)]; ok {
		return k
	}
	name := string(buf)
	k := int32(len(b.names))
	b.index[name] = k
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "\uFFFD")
	}
	b.names = append(b.names, name)
	var bits uint32
	for i := range b.opt.Rules {
		if r := &b.opt.Rules[i]; r.Keys != nil && i < 32 && r.Keys[name] {
			bits |= 1 << i
		}
	}
	b.keyBits = append(b.keyBits, bits)
	b.keyPrec = append(b.keyPrec, 0)
	return k
}

func appendField(buf []byte, rec *Record, f Field, depth int) []byte {
	var v []byte
	switch f {
	case FieldIP:
		v = rec.Host
	case FieldLogname:
		v = rec.Logname
	case FieldUser:
		v = rec.User
	case FieldMethod:
		v = rec.Method
	case FieldPath:
		v = rec.Path
	case FieldPathPrefix:
		return append(buf, pathPrefix(rec.Path, depth)...)
	case FieldStatus:
		if rec.Status == 0 {
			return append(buf, '-')
		}
		return append(buf, byte('0'+rec.Status/100), byte('0'+rec.Status/10%10), byte('0'+rec.Status%10))
	case FieldUserAgent:
		v = rec.UserAgent
	case FieldReferer:
		v = rec.Referer
	}
	if len(v) == 0 {
		return append(buf, '-')
	}
	return append(buf, v...)
}

// pathPrefix is the first depth segments of a request target without its
// query: "/a/b/c?x" at depth 1 is "/a", at depth 2 "/a/b".
func pathPrefix(p []byte, depth int) []byte {
	if i := bytes.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if len(p) == 0 {
		return []byte("/")
	}
	n := 0
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			n++
			if n == depth {
				return p[:i]
			}
		}
	}
	return p
}

// finish sorts the requests by key and time, applies rate rules and labels.
func (b *builder) finish() *Traffic {
	nk := len(b.names)
	t := &Traffic{SubSecond: b.subSec, Stats: b.stats}
	t.Stats.Requests = int64(len(b.times))
	minT := slices.Min(b.times)
	maxT := slices.Max(b.times)
	start := minT - (minT % secondNs)
	t.StartUnix = start / secondNs
	t.DurationS = int((maxT-start)/secondNs) + 1

	// Key order: requests descending, then name.
	count := make([]int64, nk)
	for _, k := range b.keys {
		count[k]++
	}
	order := make([]int32, nk)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if c := cmp.Compare(count[y], count[x]); c != 0 {
			return c
		}
		return strings.Compare(b.names[x], b.names[y])
	})
	rank := make([]int32, nk)
	for r, k := range order {
		rank[k] = int32(r)
	}
	// Counting sort by key rank (stable), then by time within each key.
	t.offsets = make([]int64, nk+1)
	for r, k := range order {
		t.offsets[r+1] = t.offsets[r] + count[k]
	}
	n := len(b.times)
	perm := make([]int32, n)
	next := slices.Clone(t.offsets[:nk])
	for i, k := range b.keys {
		r := rank[k]
		perm[next[r]] = int32(i)
		next[r]++
	}
	for r := range nk {
		seg := perm[t.offsets[r]:t.offsets[r+1]]
		if !slices.IsSortedFunc(seg, func(x, y int32) int { return cmp.Compare(b.times[x], b.times[y]) }) {
			slices.SortStableFunc(seg, func(x, y int32) int { return cmp.Compare(b.times[x], b.times[y]) })
		}
	}
	t.times = make([]int64, n)
	for i, j := range perm {
		t.times[i] = b.times[j] - start
	}
	b.times = nil

	// Rate rules mark keys whose matching requests reach the rate.
	for j, ri := range b.rateRule {
		rule := &b.opt.Rules[ri]
		win := rule.Rate.WindowS * secondNs
		var ts []int64
		for r, k := range order {
			if p := b.keyPrec[k]; p != 0 && p <= uint8(ri+1) {
				continue
			}
			ts = ts[:0]
			for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
				if b.rateBits[perm[i]]&(1<<j) != 0 {
					ts = append(ts, t.times[i])
				}
			}
			if reachesRate(ts, rule.Rate.Requests, win) {
				b.keyPrec[k] = uint8(ri + 1)
			}
		}
	}

	// Labels: the first rule that marks the request or its key.
	t.labels = make([]model.Stage, n)
	t.Keys = make([]Key, nk)
	ruleCount := map[uint8]int64{}
	for r, k := range order {
		key := &t.Keys[r]
		key.Name, key.Requests = b.names[k], count[k]
		kp := b.keyPrec[k]
		clear(ruleCount)
		for i := t.offsets[r]; i < t.offsets[r+1]; i++ {
			p, st := uint8(noPrec), model.NoStage
			if kp != 0 {
				p, st = kp, b.opt.Rules[kp-1].Stage
			}
			if b.reqPrec != nil {
				if rp := b.reqPrec[perm[i]]; rp < p {
					p, st = rp, b.reqStage[perm[i]]
				}
			}
			t.labels[i] = st
			key.ByStage[st]++
			if st != model.NoStage && p != 0 {
				ruleCount[p]++
			}
		}
		key.Class, key.Stage = majority(key.ByStage)
		var best uint8
		for p, c := range ruleCount {
			if best == 0 || c > ruleCount[best] || (c == ruleCount[best] && p < best) {
				best = p
			}
		}
		if best != 0 {
			key.Rule = b.opt.Rules[best-1].Name
		} else if key.Class == model.Abusive {
			key.Rule = "label column"
		}
	}
	return t
}

// reachesRate reports whether some window of win ns holds at least n of the
// sorted times ts.
func reachesRate(ts []int64, n int64, win int64) bool {
	if int64(len(ts)) < n {
		return false
	}
	for i := int(n - 1); i < len(ts); i++ {
		if ts[i]-ts[i-int(n-1)] < win {
			return true
		}
	}
	return false
}

// majority is the label of most requests; abusive wins a tie with legit, and
// among stages the earlier one (design, code, none) wins a tie.
func majority(by [4]int64) (model.Class, model.Stage) {
	best := model.StageDesign
	for _, s := range model.Stages {
		if by[s] > by[best] {
			best = s
		}
	}
	var abusive int64
	for _, s := range model.Stages {
		abusive += by[s]
	}
	if abusive == 0 || by[model.NoStage] > by[best] {
		return model.Legit, model.NoStage
	}
	return model.Abusive, best
}

// Requests is the number of requests.
func (t *Traffic) Requests() int64 { return int64(len(t.times)) }

// Times returns key i's request times, ns since StartUnix, sorted, before
// spreading (do not modify).
func (t *Traffic) Times(i int) []int64 { return t.times[t.offsets[i]:t.offsets[i+1]] }

// Labels returns key i's request labels, in the order of Times (do not
// modify); model.NoStage is legit.
func (t *Traffic) Labels(i int) []model.Stage { return t.labels[t.offsets[i]:t.offsets[i+1]] }
