package export

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/ingest"
	"github.com/ratesweep/ratesweep/internal/yamlx"
	"github.com/ratesweep/ratesweep/model"
)

// The shadow round trip: a proxy logs, per request, what its limit
// decided (nginx with limit_req_dry_run on: what it would have done,
// $limit_req_status; HAProxy: its deny rule's status; envoy: the RL
// response flag), with its own clock. Shadow replays the same requests, at
// the logged times, through the model's limiter for the policy and counts
// where the two agree. Only reading a request's (time, key, decision)
// differs between the proxies.

// Proxies whose logs Shadow reads.
var ShadowProxies = []string{"nginx", "haproxy", "envoy"}

// ShadowOptions configure Shadow.
type ShadowOptions struct {
	// Proxy is the proxy that wrote the log: nginx (a dry run's access log
	// in the log_format of export --to nginx), haproxy (option httplog) or
	// envoy (its default text format, or the envoy JSON lines preset). ""
	// detects it from the log's first lines: HAProxy's or envoy's format,
	// else nginx.
	Proxy string
	// Key is the log field the limit hangs on: ip (default; envoy:
	// global), user (nginx), path_prefix (the first path segment), global
	// (one key for every request) or header:NAME (nginx: the quoted header
	// value that the exported log_format writes after $msec).
	Key string
	// DenyStatus is the HTTP status of HAProxy's deny rule (deny_status;
	// 0: 429, as export --to haproxy writes).
	DenyStatus int
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
	Proxy string // the proxy whose log was read (nginx, haproxy, envoy)
	Lines int64  // requests read
	// Statuses counts the decisions as logged: $limit_req_status values
	// (nginx), statuses with "denied" after the deny rule's (haproxy),
	// statuses with "RL" after the rate-limited ones (envoy).
	Statuses map[string]int64
	Compared int64 // requests with a decision
	// Skipped counts the lines not in the proxy's format (HAProxy's own
	// messages, a line cut short), and SkippedFirst is the first of them.
	Skipped      int64
	SkippedFirst string
	ExactTimes   bool // times to the millisecond (else whole seconds, spread in log order)
	Keys         int
	Agree        int64
	ProxyOnly    int64 // admitted by the proxy, rejected by the model
	ModelOnly    int64 // rejected by the proxy, admitted by the model
	ProxyAdmits  int64
	ModelAdmits  int64
	Worst        []KeyAgreement // the keys with the most disagreements, most first (at most 10)
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

// shadowDecision is what one log line says of its request.
type shadowDecision struct {
	status  string // counted in ShadowResult.Statuses
	decided bool   // the limit ran (else the line is counted, not compared)
	admit   bool
	t       int64 // Unix time, ns
	exact   bool  // t to the millisecond
	header  string
	quoted  bool // header holds the logged header key's value
}

// shadowReader reads one proxy's log: the ingest format and the decision a
// record holds.
type shadowReader struct {
	opt    ingest.ReaderOptions
	decide func(rec *ingest.Record) (shadowDecision, error)
}

// Shadow reads a proxy's log and compares every logged decision with the
// model's limiter for p on the logged times, key by key. nginx's log is a
// Combined line ending with $limit_req_status (and optionally $msec, the
// log time in seconds with milliseconds: the exported nginx log_format);
// HAProxy's is option httplog's line, its accept date to the millisecond,
// a request rejected when its status is the deny status and HAProxy ended
// it (termination state P…); envoy's is its default access log format (or
// the JSON preset with response_flags), a request rejected when its
// response flags hold RL, at its %START_TIME%.
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
	if o.Proxy != "" && !slices.Contains(ShadowProxies, o.Proxy) {
		return nil, fmt.Errorf("--proxy: %s is not nginx, haproxy or envoy", quoteShort(o.Proxy))
	}
	if err := checkShadowKey(o.Proxy, o.Key); err != nil {
		return nil, err
	}
	dr, _, closeZ, err := ingest.Decompress(r)
	if err != nil {
		return nil, err
	}
	defer closeZ()
	br := bufio.NewReaderSize(dr, 64<<10)
	sr, err := shadowProxy(&o, br)
	if err != nil {
		return nil, err
	}
	rd, err := ingest.NewReader(br, sr.opt)
	if err != nil {
		return nil, err
	}
	res := &ShadowResult{Proxy: o.Proxy, Statuses: map[string]int64{}, ExactTimes: true}
	perKey := map[string][]shadowReq{}
	var order []string
	first, firstSet := int64(0), false
	var keyBytes int64 // bytes of the keys' names
	for rd.Scan() {
		rec := rd.Record()
		res.Lines++
		dec, err := sr.decide(rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", rec.Line, err)
		}
		res.Statuses[dec.status]++
		if !dec.decided {
			continue
		}
		if !dec.exact {
			res.ExactTimes = false
		}
		t := dec.t
		if !firstSet {
			first, firstSet = t, true
		}
		key, err := shadowKey(o.Key, rec, dec)
		if err != nil {
			return nil, err
		}
		if _, ok := perKey[key]; !ok {
			order = append(order, key)
			keyBytes += int64(len(key))
		}
		perKey[key] = append(perKey[key], shadowReq{t - first, dec.admit})
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
		return nil, fmt.Errorf("no %s line among %d (first: %v)", shadowFormatName[o.Proxy], rd.Lines(), &rd.Samples()[0])
	}
	if res.Lines == 0 {
		return nil, fmt.Errorf("the log is empty")
	}
	if res.Skipped = rd.Malformed(); res.Skipped > 0 && len(rd.Samples()) > 0 {
		res.SkippedFirst = rd.Samples()[0].Error()
	}
	res.Keys = len(order)
	for _, k := range order {
		res.compare(p, first, k, perKey[k])
	}
	sort.SliceStable(res.Worst, func(i, j int) bool {
		return res.Worst[i].ProxyOnly+res.Worst[i].ModelOnly > res.Worst[j].ProxyOnly+res.Worst[j].ModelOnly
	})
	if len(res.Worst) > 10 {
		res.Worst = res.Worst[:10]
	}
	return res, nil
}

// shadowProxy settles which proxy wrote the log (o.Proxy, detected from
// its first lines when not given) and the key (o.Key, ip by default), and
// returns that proxy's reader.
func shadowProxy(o *ShadowOptions, br *bufio.Reader) (shadowReader, error) {
	detected := detectShadow(br)
	if o.Proxy == "" {
		o.Proxy = "nginx"
		switch detected {
		case ingest.FormatHAProxy:
			o.Proxy = "haproxy"
		case ingest.FormatEnvoyText, ingest.FormatEnvoy:
			o.Proxy = "envoy"
		}
		if err := checkShadowKey(o.Proxy, o.Key); err != nil {
			return shadowReader{}, fmt.Errorf("a log of %s (detected): %v", o.Proxy, err)
		}
	}
	if o.Key == "" {
		o.Key = "ip" // as export writes: envoy's local_ratelimit with a bucket per address
	}
	var sr shadowReader
	switch o.Proxy {
	case "haproxy":
		sr = haproxyShadow(o.DenyStatus)
	case "envoy":
		sr = envoyShadow(detected == ingest.FormatEnvoy || detected == ingest.FormatJSONL) // JSON: the preset's fields
	default:
		sr = nginxShadow()
	}
	return sr, nil
}

// shadowKey is the key a logged request hangs on under --key key.
func shadowKey(key string, rec *ingest.Record, dec shadowDecision) (string, error) {
	switch {
	case key == "global":
		return "global", nil
	case strings.HasPrefix(key, "header:"):
		if !dec.quoted {
			return "", fmt.Errorf("line %d: no quoted %s value after $msec (the log_format of ratesweep export --to nginx --key %s writes it)", rec.Line, strings.TrimPrefix(key, "header:"), key)
		}
		return dec.header, nil
	case key == "ip":
		if len(rec.Host) == 0 {
			return "", fmt.Errorf("line %d: no client address for --key ip", rec.Line)
		}
		return string(rec.Host), nil
	case key == "user":
		return string(rec.User), nil
	case key == "path_prefix":
		path := rec.Path
		if i := bytes.IndexAny(path, "?#"); i >= 0 {
			path = path[:i]
		}
		seg := bytes.SplitN(bytes.TrimPrefix(path, []byte("/")), []byte("/"), 2)
		return "/" + string(seg[0]), nil
	}
	return "", fmt.Errorf("--key: %s", quoteShort(key))
}

// compare replays one key's requests (reqs, times from first) through the
// model and adds where it agrees with the proxy to res.
func (res *ShadowResult) compare(p model.Policy, first int64, k string, reqs []shadowReq) {
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

// shadowFormatName names each proxy's log format in messages.
var shadowFormatName = map[string]string{
	"nginx":   "Combined Log Format",
	"haproxy": "HAProxy HTTP log (option httplog)",
	"envoy":   "envoy access log",
}

// detectShadow is the format of the first of the log's first lines (at
// most 64 KiB) whose format is known, or FormatAuto. HAProxy's own
// messages (Proxy fe started.) may come before its first request.
func detectShadow(br *bufio.Reader) ingest.Format {
	head, _ := br.Peek(64 << 10)
	for len(head) > 0 {
		line, rest, found := bytes.Cut(head, []byte("\n"))
		if !found && len(rest) == 0 && len(head) == 64<<10 {
			break // a cut line
		}
		head = rest
		if f := ingest.Detect(bytes.TrimSuffix(line, []byte("\r"))); f != ingest.FormatAuto {
			return f
		}
	}
	return ingest.FormatAuto
}

// nginxShadow reads a Combined line followed by $limit_req_status, $msec
// and a quoted header value (the exported nginx log_format).
func nginxShadow() shadowReader {
	return shadowReader{opt: ingest.ReaderOptions{Format: ingest.FormatCombined}, decide: func(rec *ingest.Record) (shadowDecision, error) {
		tr, err := splitTrailer(rec.Trailer)
		if err != nil {
			return shadowDecision{}, err
		}
		if tr.status == "" {
			return shadowDecision{}, fmt.Errorf("no $limit_req_status after the user agent (log_format: see ratesweep export --to nginx)")
		}
		d := shadowDecision{status: tr.status, decided: true, header: tr.header, quoted: tr.quoted}
		switch tr.status {
		case "PASSED", "DELAYED", "DELAYED_DRY_RUN":
			d.admit = true
		case "REJECTED", "REJECTED_DRY_RUN":
		case "-":
			d.decided = false // the limit did not run (another location, an internal redirect)
			return d, nil
		default:
			return d, fmt.Errorf("%q is not a $limit_req_status (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or -)", tr.status)
		}
		d.t = rec.Time * 1e9
		if tr.msec != "" {
			ms, err := strconv.ParseFloat(tr.msec, 64)
			if err != nil {
				return d, fmt.Errorf("%q is not a $msec time (seconds.milliseconds)", tr.msec)
			}
			d.t, d.exact = int64(ms*1e3+0.5)*1e6, true
		}
		return d, nil
	}}
}

// haproxyShadow reads HAProxy's option httplog line: a request is
// rejected when its status is deny (the deny rule's status) and HAProxy
// itself ended it (a termination state starting with P, when logged: a
// backend's own 429 is not the limit's); its time is the request's date
// (%tr), to the millisecond. A bad request (<BADREQ>) or a session that
// ended while HAProxy waited for the request (termination state ?R other
// than PR and LR) had no decision.
func haproxyShadow(deny int) shadowReader {
	if deny == 0 {
		deny = 429
	}
	denied := strconv.Itoa(deny) + " denied"
	return shadowReader{opt: ingest.ReaderOptions{Format: ingest.FormatHAProxy}, decide: func(rec *ingest.Record) (shadowDecision, error) {
		if rec.Status == 0 {
			return shadowDecision{status: "-"}, nil // no response (the client left first)
		}
		d := shadowDecision{status: strconv.Itoa(rec.Status), decided: true, admit: true, t: rec.Time*1e9 + rec.TimeNs, exact: true}
		if string(rec.Method) == "<BADREQ>" {
			d.status, d.decided = d.status+" <BADREQ>", false // no request for the rules to run on
			return d, nil
		}
		if f := rec.Flags; len(f) == 4 && f[1] == 'R' && f[0] != 'P' && f[0] != 'L' {
			// The session ended before the request was whole (a client
			// that left or timed out: CR--, cR--): the http-request
			// rules never ran.
			d.status, d.decided = d.status+" "+string(f), false
			return d, nil
		}
		if rec.Status == deny && (rec.Flags == nil || rec.Flags[0] == 'P') {
			d.status, d.admit = denied, false
		}
		return d, nil
	}}
}

// envoyShadow reads envoy's default access log format (or, json, the
// envoy JSON lines preset with response_flags): a request is rejected when
// its response flags hold RL (rate limited); its time is %START_TIME%.
func envoyShadow(json bool) shadowReader {
	opt := ingest.ReaderOptions{Format: ingest.FormatEnvoyText}
	if json {
		opt = ingest.ReaderOptions{Format: ingest.FormatEnvoy, CSV: ingest.CSVOptions{Columns: map[string]string{"label": "response_flags"}}}
	}
	return shadowReader{opt: opt, decide: func(rec *ingest.Record) (shadowDecision, error) {
		flags := rec.Flags
		if json {
			if rec.Label == nil {
				return shadowDecision{}, fmt.Errorf("no response_flags (envoy marks a request its rate limit rejected RL)")
			}
			if flags = rec.Label; string(flags) == "-" {
				flags = nil
			}
		}
		if rec.Status == 0 {
			return shadowDecision{}, fmt.Errorf("no response code (%s)", map[bool]string{true: "response_code", false: "%RESPONSE_CODE%"}[json])
		}
		d := shadowDecision{status: strconv.Itoa(rec.Status), decided: true, admit: true, t: rec.Time*1e9 + rec.TimeNs, exact: true}
		for f := range bytes.SplitSeq(flags, []byte(",")) {
			if string(f) == "RL" {
				d.status, d.admit = d.status+" RL", false
			}
		}
		return d, nil
	}}
}

// checkShadowKey validates ShadowOptions.Key for a proxy ("": not known
// yet): user and header keys are in nginx's log only.
func checkShadowKey(proxy, k string) error {
	switch k {
	case "", "ip", "path_prefix", "global":
		return nil
	}
	h, header := strings.CutPrefix(k, "header:")
	if k != "user" && !header {
		return fmt.Errorf("--key: %s is not ip, user, path_prefix, global or header:NAME", quoteShort(k))
	}
	if proxy != "" && proxy != "nginx" {
		return fmt.Errorf("--key: %s is read from nginx's log only (the log_format of ratesweep export --to nginx); a %s log has ip, path_prefix or global", quoteShort(k), proxy)
	}
	if header {
		return checkHeader(h)
	}
	return nil
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
	proxy := r.Proxy
	if proxy == "" {
		proxy = "nginx"
	}
	fmt.Fprintf(w, "shadow: %s log, %d requests, %d with a limit decision, over %d keys; model %s\n", proxy, r.Lines, r.Compared, r.Keys, p.Canonical())
	var sts []string
	for s := range r.Statuses {
		sts = append(sts, s)
	}
	sort.Strings(sts)
	field := map[string]string{"haproxy": "HAProxy statuses", "envoy": "envoy statuses (RL: rate limited)"}[r.Proxy]
	if field == "" {
		field = "$limit_req_status"
	}
	fmt.Fprintf(w, "  %s:", field)
	for _, s := range sts {
		fmt.Fprintf(w, " %s %d", s, r.Statuses[s])
	}
	fmt.Fprintln(w)
	if r.Skipped > 0 {
		fmt.Fprintf(w, "  skipped: %d lines not in the %s format (first: %s)\n", r.Skipped, proxy, r.SkippedFirst)
	}
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
