package ingest

import "maps"

// jsonPresets are the field paths of the JSON lines formats people have,
// from each vendor's documented field list. Every preset's time is read
// with time_format auto (RFC 3339 text of any precision, or a Unix number
// whose unit its magnitude gives), exactly.
var jsonPresets = map[Format]map[string]string{
	// Envoy's JSON access log with the field names of Istio's JSON encoding
	// (start_time, method, path, response_code, downstream_remote_address, …).
	FormatEnvoy: {"time": "start_time", "ip": "downstream_remote_address", "method": "method",
		"path": "path", "status": "response_code", "user_agent": "user_agent"},
	// Caddy's http.log.access: ts is Unix seconds with a fraction;
	// client_ip is the address Caddy believes (the peer, or the
	// X-Forwarded-For client when the peer is a trusted proxy; Caddy 2.7+).
	FormatCaddy: {"time": "ts", "ip": "request.client_ip", "user": "user_id", "method": "request.method",
		"path": "request.uri", "status": "status", "user_agent": "request.headers.User-Agent",
		"referer": "request.headers.Referer"},
	// Traefik's access log in JSON; headers kept as request_<Name>.
	FormatTraefik: {"time": "StartUTC", "ip": "ClientHost", "user": "ClientUsername", "method": "RequestMethod",
		"path": "RequestPath", "status": "DownstreamStatus", "user_agent": "request_User-Agent",
		"referer": "request_Referer"},
	// Cloudflare Logpush, HTTP requests dataset: EdgeStartTimestamp is
	// unixnano, unix or RFC 3339 depending on the job's timestamp format.
	FormatCloudflare: {"time": "EdgeStartTimestamp", "ip": "ClientIP", "method": "ClientRequestMethod",
		"path": "ClientRequestURI", "status": "EdgeResponseStatus", "user_agent": "ClientRequestUserAgent",
		"referer": "ClientRequestReferer"},
	// Google Cloud HTTP(S) load balancer logs as Cloud Logging exports them
	// (LogEntry with httpRequest); requestUrl is a full URL.
	FormatGCPLB: {"time": "timestamp", "ip": "httpRequest.remoteIp", "method": "httpRequest.requestMethod",
		"path": "httpRequest.requestUrl", "status": "httpRequest.status", "user_agent": "httpRequest.userAgent",
		"referer": "httpRequest.referer"},
}

// detectOrder is the order in which presets are tried on a JSON line: the
// first whose time and ip paths are both present wins.
var detectOrder = []Format{FormatGCPLB, FormatCloudflare, FormatTraefik, FormatCaddy, FormatEnvoy}

// IsJSON reports whether f is JSON lines (generic or a preset).
func (f Format) IsJSON() bool { return f == FormatJSONL || jsonPresets[f] != nil }

// Columnar reports whether f maps record fields by configured column names
// or field paths (csv:, parquet:, jsonl: sections).
func (f Format) Columnar() bool { return f == FormatCSV || f == FormatParquet || f.IsJSON() }

// PresetColumns returns a copy of a preset's field paths (nil for others).
func PresetColumns(f Format) map[string]string { return maps.Clone(jsonPresets[f]) }

// jsonOptions are the effective options of a JSON lines format: a preset's
// field paths overridden by the configured ones, time_format auto unless
// configured.
func jsonOptions(f Format, c CSVOptions) CSVOptions {
	if f == FormatJSONL {
		if !c.TimeSet {
			c.TimeFormat = TimeAuto
		}
		return c
	}
	cols := PresetColumns(f)
	maps.Copy(cols, c.Columns)
	out := CSVOptions{TimeFormat: TimeAuto, Columns: cols}
	if c.TimeSet {
		out.TimeFormat, out.TimeSet = c.TimeFormat, true
	}
	return out
}

// detectJSON names the preset a JSON object line matches, FormatJSONL when
// it is an object no preset matches, or FormatAuto when it is not JSON.
func detectJSON(line []byte) Format {
	if len(line) == 0 || line[0] != '{' {
		return FormatAuto
	}
	for _, f := range detectOrder {
		p, _ := newJSONParser(jsonOptions(f, CSVOptions{}))
		var rec Record
		err := p.parse(line, &rec)
		if _, notJSON := err.(jsonError); notJSON {
			return FormatAuto
		}
		if p.found[0] && p.found[1] {
			return f
		}
	}
	if caddyRemoteIP(line) {
		return FormatCaddy
	}
	return FormatJSONL
}

// caddyLegacyIP is the key ip of a Caddy log written before client_ip
// (Caddy 2.7): the peer's address.
const caddyLegacyIP = "request.remote_ip"

// caddyRemoteIP reports whether a JSON line is a Caddy access log without
// request.client_ip (ts and request.remote_ip present).
func caddyRemoteIP(line []byte) bool {
	p, _ := newJSONParser(jsonOptions(FormatCaddy, CSVOptions{Columns: map[string]string{"ip": caddyLegacyIP}}))
	var rec Record
	return p.parse(line, &rec) == nil && p.found[0] && p.found[1]
}
