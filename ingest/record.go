package ingest

import (
	"bytes"
	"fmt"
	"strings"
)

// Format is a log format.
type Format uint8

const (
	FormatAuto       Format = iota // detect from the first line
	FormatCLF                      // Common Log Format
	FormatCombined                 // Combined Log Format (CLF + referer and user agent)
	FormatNASATSV                  // the NASA KSC TSV: host, logname, time (epoch s), method, url, response, bytes, referer, useragent
	FormatCSV                      // CSV with a header and configured columns
	FormatParquet                  // Parquet with configured columns
	FormatJSONL                    // JSON lines with configured field paths
	FormatEnvoy                    // Envoy / Istio JSON access log (JSON lines preset)
	FormatCaddy                    // Caddy's JSON access log (JSON lines preset)
	FormatTraefik                  // Traefik's JSON access log (JSON lines preset)
	FormatCloudflare               // Cloudflare Logpush, HTTP requests dataset (JSON lines preset)
	FormatGCPLB                    // Google Cloud HTTP(S) load balancer, Cloud Logging export (JSON lines preset)
	FormatALB                      // AWS Application Load Balancer access log
	FormatW3C                      // W3C extended log format (#Fields: header; CloudFront, IIS)
	FormatEnvoyText                // envoy's text access log: the default format string or envoy_format
	FormatHAProxy                  // HAProxy's HTTP log (option httplog) or haproxy_format
	FormatNginx                    // nginx by its log_format (nginx_log_format; default combined)
)

var formatNames = []string{"auto", "clf", "combined", "nasa-tsv", "csv", "parquet",
	"jsonl", "envoy", "caddy", "traefik", "cloudflare", "gcp-lb", "alb", "w3c", "envoy-text", "haproxy", "nginx"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", f)
}

// ParseFormat parses a format name (auto, clf, combined, nasa-tsv, csv,
// parquet, jsonl and its presets, alb, w3c, envoy-text, haproxy, nginx).
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if s == n {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("unknown log format %q (known: %s)", s, strings.Join(formatNames, ", "))
}

// Record is one parsed request. Its byte slices alias the reader's buffer and
// are valid only until the next call to Scan.
type Record struct {
	Line      int64 // 1-based line number in the file
	Time      int64 // Unix seconds, UTC
	TimeNs    int64 // sub-second part of Time, ns (CSV with fractional times only)
	Host      []byte
	Logname   []byte // RFC 1413 identity (CLF's second field)
	User      []byte // authenticated user (CLF's third field)
	Method    []byte
	Path      []byte // request target as logged (path and query)
	Proto     []byte
	Status    int // 0 when logged as "-"
	Bytes     int64
	Referer   []byte
	UserAgent []byte
	Label     []byte // CSV label column, if configured
	// Forwarded is the X-Forwarded-For list a line logs (envoy-text,
	// haproxy and nginx formats; a Combined line that ends with one, as
	// nginx's stock main format does), or nil.
	Forwarded []byte
	// Started is set when Time is when the request started while the line
	// was written when it completed (ALB's request_creation_time): however
	// far back it goes behind earlier lines, it is not malformed.
	Started bool
	// Trailer is what a Combined line holds after the user agent (fields a
	// log_format appends, e.g. nginx's $limit_req_status $msec).
	Trailer []byte
	// Flags is what the proxy logged of how it ended the request: envoy's
	// %RESPONSE_FLAGS% (envoy-text; "RL" when its rate limit rejected it)
	// or HAProxy's termination state %tsc ("PR--" when an http-request
	// deny rule did); nil when the format has none or logged "-".
	Flags []byte
}

// LimitReqStatuses are the values of nginx's $limit_req_status, in the
// order inspect lists them ("-": the limit did not run for the request).
var LimitReqStatuses = []string{"PASSED", "DELAYED", "DELAYED_DRY_RUN", "REJECTED", "REJECTED_DRY_RUN", "-"}

// LimitReqStatus is the nginx $limit_req_status a Combined line logs as
// the first field after the user agent (the log_format of ratesweep
// export --to nginx), or "" when that field is not one.
func (r *Record) LimitReqStatus() string {
	f := r.Trailer
	for len(f) > 0 && (f[0] == ' ' || f[0] == '\t') {
		f = f[1:]
	}
	if i := bytes.IndexAny(f, " \t"); i >= 0 {
		f = f[:i]
	}
	for _, s := range LimitReqStatuses {
		if string(f) == s {
			return s
		}
	}
	return ""
}

func (r *Record) reset() {
	*r = Record{Line: r.Line}
}

// Field names a part of a record usable in keys and rules.
type Field uint8

const (
	FieldIP         Field = iota + 1 // the client host or address
	FieldLogname                     // CLF identity
	FieldUser                        // CLF authenticated user
	FieldMethod                      // request method
	FieldPath                        // request target (path and query)
	FieldPathPrefix                  // the first path_depth segments of the path, without the query
	FieldStatus                      // response status
	FieldUserAgent                   // User-Agent header (Combined, CSV)
	FieldReferer                     // Referer header (Combined, CSV)
)

var fieldNames = map[string]Field{
	"ip": FieldIP, "host": FieldIP, "logname": FieldLogname, "user": FieldUser,
	"method": FieldMethod, "path": FieldPath, "path_prefix": FieldPathPrefix,
	"status": FieldStatus, "user_agent": FieldUserAgent, "referer": FieldReferer,
}

// FieldNames lists the key field names in documentation order.
var FieldNames = []string{"ip", "host", "logname", "user", "method", "path", "path_prefix", "status", "user_agent", "referer"}

// ParseField parses a key field name.
func ParseField(s string) (Field, error) {
	if f, ok := fieldNames[s]; ok {
		return f, nil
	}
	return 0, fmt.Errorf("unknown key field %q (known: %s)", s, strings.Join(FieldNames, ", "))
}

func (f Field) String() string {
	for _, n := range FieldNames {
		if fieldNames[n] == f && n != "host" {
			return n
		}
	}
	return fmt.Sprintf("Field(%d)", f)
}
