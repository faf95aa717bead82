package ingest

import (
	"fmt"
	"slices"
)

// DominantKeyShare is the share of a log's requests above which one ip key
// is suspicious: a load balancer, proxy or NAT in front of the server, whose
// address stands for every client behind it.
const DominantKeyShare = 0.25

// dominantMinRequests is the fewest requests a log needs for the warning.
const dominantMinRequests = 50

// KeyWarning warns when the log is keyed by ip and its busiest key holds
// more than DominantKeyShare of the requests, naming the field or setting
// that keys by the client behind it; "" otherwise.
func (t *Traffic) KeyWarning(key []Field) string {
	if len(key) == 0 {
		key = []Field{FieldIP}
	}
	n := t.Requests()
	if !slices.Contains(key, FieldIP) || len(t.Keys) == 0 || n < dominantMinRequests {
		return ""
	}
	top := t.Keys[0]
	share := float64(top.Requests) / float64(n)
	if share <= DominantKeyShare {
		return ""
	}
	head := fmt.Sprintf("key %s holds %.0f%% of the requests: a load balancer or proxy in front of the server? ", top.Name, 100*share)
	fwd := t.Stats.Forwarded
	switch {
	case fwd > 0 && t.Format.Templated():
		return head + fmt.Sprintf("%d requests log X-Forwarded-For: trusted_proxies: [%s] keys by the client it forwards", fwd, top.Name)
	case fwd > 0:
		return head + fmt.Sprintf("%d lines end with an X-Forwarded-For address (nginx's main format): read them with format: nginx, nginx_log_format: '<the log_format>' and trusted_proxies: [%s]", fwd, top.Name)
	case t.Format == FormatCaddy:
		return head + "Caddy's client_ip is the peer unless Caddy's own trusted_proxies names the balancer: set it there"
	case t.Format == FormatEnvoy:
		return head + "key by the forwarded client: jsonl: {columns: {ip: x_forwarded_for}} with trusted_proxies: [the proxies in front]"
	case t.Format.IsJSON():
		return head + "key by the forwarded client: jsonl.columns.ip set to the X-Forwarded-For field path, with trusted_proxies: [the proxies in front]"
	case t.Format == FormatW3C:
		return head + "log the X-Forwarded-For header (IIS: cs(X-Forwarded-For); CloudFront: c-ip is already the client) or key by user"
	}
	return head + "log the client it forwards ($http_x_forwarded_for in nginx) and read it with format: nginx and trusted_proxies, or key by user"
}
