package export

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// The shadow-mode round trip: nginx with limit_req_dry_run on logs, per
// request, what its limit would have done ($limit_req_status) without
// rejecting anything. Shadow replays the same requests through the model's
// limiter for the policy and counts where the two agree.

// ShadowOptions configure Shadow.
type ShadowOptions struct {
	// Key is the log field the limit hangs on: ip (default), user,
	// path_prefix (the first path segment), global (one key for every
	// request) or header:NAME (the quoted header value that the exported
	// log_format writes after $msec for a header key).
	Key string
	// MaxMemory bounds the requests and keys held, bytes (0: no bound):
	// counted as the log is read, shadowReqBytes a request and
	// shadowKeyBytes a key beside its bytes, after shadowBase; past it
	// Shadow stops with an error naming --max-memory.
	MaxMemory int64
}

// Shadow's memory model, bytes: the runtime, a request (its 16 bytes and
// the slice's growth), a key (map entry, slice header, order entry).
const (
	shadowBase     = 64 << 20
	shadowReqBytes = 32
	shadowKeyBytes = 96
)

// ShadowResult is the agreement between a proxy's logged decisions and
// the model's on the same requests.
type ShadowResult struct {
	Lines       int64            // requests read
	Statuses    map[string]int64 // $limit_req_status values seen
	Compared    int64            // requests with a decision (PASSED, DELAYED*, REJECTED*)
	ExactTimes  bool             // times from $msec (else whole seconds, spread in log order)
	Keys        int
	Agree       int64
	ProxyOnly   int64 // admitted by the proxy, rejected by the model
	ModelOnly   int64 // rejected by the proxy, admitted by the model
	ProxyAdmits int64
	ModelAdmits int64
	Worst       []KeyAgreement // the keys with the most disagreements, most first (at most 10)
}

// KeyAgreement is one key's disagreements.
type KeyAgreement struct {
	Key                  string
	Requests             int64
	ProxyOnly, ModelOnly int64
}

type shadowReq struct {
	t     int64 // ns since the first request
	admit bool
}

// Shadow reads a Combined log whose lines end with $limit_req_status
// (and optionally $msec, the log time in seconds with milliseconds: the
// exported nginx log_format) and compares every decision with the model's
// limiter for p, key by key.
func Shadow(r io.Reader, p model.Policy, o ShadowOptions) (*ShadowResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Weighed() {
		return nil, fmt.Errorf("shadow replays every request at cost 1 without its response: it cannot check a policy with count_if or costs (docs/costs.md)")
	}
	if p.Stack != nil {
		return nil, fmt.Errorf("shadow compares one limit per logged key; a stacked policy (all_of) has a limit per component: shadow each component on its own")
	}
	if err := checkShadowKey(o.Key); err != nil {
		return nil, err
	}
	rd, err := ingest.NewReader(r, ingest.ReaderOptions{Format: ingest.FormatCombined})
	if err != nil {
		return nil, err
	}
	res := &ShadowResult{Statuses: map[string]int64{}, ExactTimes: true}
	perKey := map[string][]shadowReq{}
	var order []string
	first, firstSet := int64(0), false
	var keyBytes int64 // bytes of the keys' names
	for rd.Scan() {
		rec := rd.Record()
		res.Lines++
		tr, err := splitTrailer(rec.Trailer)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", rec.Line, err)
		}
		if tr.status == "" {
			return nil, fmt.Errorf("line %d: no $limit_req_status after the user agent (log_format: see ratesweep export --to nginx)", rec.Line)
		}
		st := tr.status
		res.Statuses[st]++
		var admit bool
		switch st {
		case "PASSED", "DELAYED", "DELAYED_DRY_RUN":
			admit = true
		case "REJECTED", "REJECTED_DRY_RUN":
		case "-":
			continue // the limit did not run (another location, an internal redirect)
		default:
			return nil, fmt.Errorf("line %d: %q is not a $limit_req_status (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or -)", rec.Line, st)
		}
		t := rec.Time * 1e9
		if tr.msec != "" {
			ms, err := strconv.ParseFloat(tr.msec, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a $msec time (seconds.milliseconds)", rec.Line, tr.msec)
			}
			t = int64(ms*1e3+0.5) * 1e6
		} else {
			res.ExactTimes = false
		}
		if !firstSet {
			first, firstSet = t, true
		}
		var key string
		switch {
		case o.Key == "global":
			key = "global"
		case strings.HasPrefix(o.Key, "header:"):
			if !tr.quoted {
				return nil, fmt.Errorf("line %d: no quoted %s value after $msec (the log_format of ratesweep export --to nginx --key %s writes it)", rec.Line, strings.TrimPrefix(o.Key, "header:"), o.Key)
			}
			key = tr.header
		case o.Key == "" || o.Key == "ip":
			key = string(rec.Host)
		case o.Key == "user":
			key = string(rec.User)
		case o.Key == "path_prefix":
			path := rec.Path
			if i := bytes.IndexAny(path, "?#"); i >= 0 {
				path = path[:i]
			}
			seg := bytes.SplitN(bytes.TrimPrefix(path, []byte("/")), []byte("/"), 2)
			key = "/" + string(seg[0])
		}
		if _, ok := perKey[key]; !ok {
			order = append(order, key)
			keyBytes += int64(len(key))
		}
		perKey[key] = append(perKey[key], shadowReq{t - first, admit})
		res.Compared++
		if o.MaxMemory > 0 && res.Compared%4096 == 0 {
			need := shadowBase + res.Compared*shadowReqBytes + int64(len(order))*shadowKeyBytes + keyBytes
			if need > o.MaxMemory {
				return nil, fmt.Errorf("line %d: %d requests of %d keys need about %s of memory, more than --max-memory %s; raise --max-memory, or compare a shorter log",
					rec.Line, res.Compared, len(order), yamlx.FormatBytes(need), yamlx.FormatBytes(o.MaxMemory))
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	if res.Lines == 0 && rd.Malformed() > 0 {
		return nil, fmt.Errorf("no Combined Log Format line among %d (first: %v)", rd.Lines(), &rd.Samples()[0])
	}
	if res.Lines == 0 {
		return nil, fmt.Errorf("the log is empty")
	}
	res.Keys = len(order)
	for _, k := range order {
		reqs := perKey[k]
		if !res.ExactTimes {
			spreadSeconds(reqs)
		}
		sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].t < reqs[j].t })
		d, _ := model.NewDeciderAt(p, first) // windows on the wall clock, as deployed
		ka := KeyAgreement{Key: k, Requests: int64(len(reqs))}
		for _, q := range reqs {
			m := d.Allow(q.t)
			if q.admit {
				res.ProxyAdmits++
			}
			if m {
				res.ModelAdmits++
			}
			switch {
			case m == q.admit:
				res.Agree++
			case q.admit:
				ka.ProxyOnly++
			default:
				ka.ModelOnly++
			}
		}
		res.ProxyOnly += ka.ProxyOnly
		res.ModelOnly += ka.ModelOnly
		if ka.ProxyOnly+ka.ModelOnly > 0 {
			res.Worst = append(res.Worst, ka)
		}
	}
	sort.SliceStable(res.Worst, func(i, j int) bool {
		return res.Worst[i].ProxyOnly+res.Worst[i].ModelOnly > res.Worst[j].ProxyOnly+res.Worst[j].ModelOnly
	})
	if len(res.Worst) > 10 {
		res.Worst = res.Worst[:10]
	}
	return res, nil
}

// checkShadowKey validates ShadowOptions.Key.
func checkShadowKey(k string) error {
	switch k {
	case "", "ip", "user", "path_prefix", "global":
		return nil
	}
	if h, ok := strings.CutPrefix(k, "header:"); ok {
		return checkHeader(h)
	}
	return fmt.Errorf("--key: %s is not ip, user, path_prefix, global or header:NAME", quoteShort(k))
}

// trailer is what the exported log_format writes after the user agent:
// $limit_req_status, then $msec, then for a header key the header's value
// in double quotes (nginx escapes a quote inside it as \x22).
type trailer struct {
	status, msec, header string
	quoted               bool // a quoted header value was there
}

func splitTrailer(b []byte) (trailer, error) {
	var t trailer
	rest := bytes.TrimSpace(b)
	word := func() string {
		w, r, _ := bytes.Cut(rest, []byte(" "))
		rest = bytes.TrimSpace(r)
		return string(w)
	}
	if len(rest) > 0 && rest[0] != '"' {
		t.status = word()
	}
	if len(rest) > 0 && rest[0] != '"' {
		t.msec = word()
	}
	if len(rest) > 0 && rest[0] == '"' {
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return t, fmt.Errorf("unterminated quoted header value %q", rest)
		}
		t.header, t.quoted = string(rest[1:end+1]), true
	}
	return t, nil
}

// spreadSeconds spreads the requests logged in one whole second evenly
// over it, in log order (a log without $msec).
func spreadSeconds(reqs []shadowReq) {
	for i := 0; i < len(reqs); {
		j := i
		for j < len(reqs) && reqs[j].t == reqs[i].t {
			j++
		}
		for k := i; k < j; k++ {
			reqs[k].t += int64(k-i) * 1e9 / int64(j-i)
		}
		i = j
	}
}

// WriteShadow prints a ShadowResult.
func WriteShadow(w io.Writer, p model.Policy, r *ShadowResult) error {
	pct := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "shadow: %d requests, %d with a limit decision, over %d keys; model %s\n", r.Lines, r.Compared, r.Keys, p.Canonical())
	var sts []string
	for s := range r.Statuses {
		sts = append(sts, s)
	}
	sort.Strings(sts)
	fmt.Fprintf(w, "  $limit_req_status:")
	for _, s := range sts {
		fmt.Fprintf(w, " %s %d", s, r.Statuses[s])
	}
	fmt.Fprintln(w)
	if !r.ExactTimes {
		fmt.Fprintln(w, "  times: whole seconds (no $msec in the log), spread evenly in log order; expect disagreements within a second")
	}
	fmt.Fprintf(w, "  admitted: proxy %d (%.2f%%), model %d (%.2f%%)\n", r.ProxyAdmits, pct(r.ProxyAdmits, r.Compared), r.ModelAdmits, pct(r.ModelAdmits, r.Compared))
	fmt.Fprintf(w, "  agreement: %d/%d = %.2f%%; admitted by the proxy only %d, by the model only %d\n",
		r.Agree, r.Compared, pct(r.Agree, r.Compared), r.ProxyOnly, r.ModelOnly)
	for _, k := range r.Worst {
		fmt.Fprintf(w, "    key %s: %d requests, proxy only %d, model only %d\n", k.Key, k.Requests, k.ProxyOnly, k.ModelOnly)
	}
	return nil
}
