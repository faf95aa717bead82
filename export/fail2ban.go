package export

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// fail2ban (docs/penalty-box.md#fail2ban): a jail over an access log whose
// lines start with the request's Unix time to the millisecond (nginx's
// $msec; fail2ban 1.0 keeps an EPOCH time's milliseconds), then the
// address and the status. The filter's failregex matches the requests the
// policy counts: every status, or count_if's. The jail's maxretry, findtime
// and bantime are the fail2ban policy's limit, window_s and
// mitigation_timeout_s. fail2ban bans addresses only: --key ip.

var fail2banForms = map[model.Algorithm]form{
	model.Fail2ban: {Exact, validOnly, nil, ""},
}

// nearestFail2ban is a jail with the policy's window as findtime (or the
// time to refill), banning at the request the policy would reject first
// from idle (capacity + 1), for findtime.
func nearestFail2ban(p model.Policy, rate float64, capacity int64) (model.Policy, string) {
	w := int(min(math.Ceil(windowOf(p, rate, capacity)), 366*24*3600))
	return model.Policy{Algorithm: model.Fail2ban, WindowS: w, Limit: capacity + 1, MitigationTimeoutS: w},
		"fail2ban bans an address for bantime at its maxretry-th failure, counted as fail2ban does over findtime (the fail2ban algorithm); it does not limit a rate"
}

// translateFail2banBox is the jail of a policy with a penalty box: bantime
// is block_s (whole seconds, rounded up).
func translateFail2banBox(p model.Policy) (model.Policy, Fit, string, error) {
	bare := p
	bare.BlockS, bare.BlockLevels = 0, nil
	q, _, why, err := Translate(bare, "fail2ban")
	if err != nil {
		return q, 0, "", err
	}
	q.MitigationTimeoutS = int(math.Ceil(p.BlockS))
	return q, Nearest, why + fmt.Sprintf("; bantime is block_s=%g", p.BlockS), nil
}

// fail2banStatuses is a failregex alternation of count_if's statuses ("" :
// every status), a whole hundred as "5\d\d".
func fail2banStatuses(countIf string) (string, error) {
	if countIf == "" {
		return `\d{3}`, nil
	}
	sts, err := model.CountIfStatuses(countIf)
	if err != nil {
		return "", err
	}
	in := map[int]bool{}
	for _, s := range sts {
		in[s] = true
	}
	var alts []string
	for h := 1; h <= 5; h++ {
		all := true
		for s := h * 100; s < h*100+100; s++ {
			all = all && in[s]
		}
		if all {
			alts = append(alts, strconv.Itoa(h)+`\d\d`)
			continue
		}
		for s := h * 100; s < h*100+100; s++ {
			if in[s] {
				alts = append(alts, strconv.Itoa(s))
			}
		}
	}
	return "(?:" + strings.Join(alts, "|") + ")", nil
}

// writeFail2ban: an nginx log_format fail2ban reads, the filter and the
// jail.
func writeFail2ban(r *Result, o Options) error {
	if r.Key != "ip" {
		return fmt.Errorf("fail2ban: --key %s: fail2ban bans addresses; export with --key ip", r.Key)
	}
	p := localNodes(r, o, "fail2ban (each reads its own access log)")
	if err := p.Validate(); err != nil {
		return fmt.Errorf("fail2ban: %s: %w", p.Canonical(), err)
	}
	sts, err := fail2banStatuses(r.Asked.CountIf)
	if err != nil {
		return fmt.Errorf("fail2ban: count_if: %w", err)
	}
	counted := "every request counts as a failure"
	if r.Asked.CountIf != "" {
		counted = "only responses with status " + r.Asked.CountIf + " count as failures (count_if)"
	}
	r.Notes = append(r.Notes,
		fmt.Sprintf("%s; failure %d within fail2ban's count over findtime %d s bans the address for bantime %d s, from that request's logged time (it was served)", counted, p.Limit, p.WindowS, p.MitigationTimeoutS),
		"fail2ban scales an address's count to its rate over the whole span when a failure comes more than findtime after the first it kept (retry · findtime / span, rounded), and forgets an address whose last failure is findtime old at its next clean-up (at most every 5 s); the model forgets it at once",
		"a banned address's requests are dropped by the firewall before nginx: not served, not logged, not counted; a ban forgets the address's count",
		"fail2ban applies a ban when it next reads the log (the polling backend: within about 1 s), not at the request's time: requests in between are served and counted afresh",
		"times are the log's $msec: fail2ban 1.0 keeps an EPOCH time's milliseconds (a strptime date pattern's %f would be dropped); keep bantime.increment off")
	r.Config = fmt.Sprintf(`# nginx, http { } context: a log fail2ban reads (Unix time to the ms first)
log_format %[1]s '$msec $remote_addr $status "$request"';
# in the server { } to protect:
#   access_log /var/log/nginx/%[1]s.log %[1]s;

# /etc/fail2ban/filter.d/%[1]s.conf
[Definition]
failregex = ^\s*<HOST> %[2]s\s
datepattern = ^EPOCH

# /etc/fail2ban/jail.d/%[1]s.local
[%[1]s]
enabled = true
filter = %[1]s
logpath = /var/log/nginx/%[1]s.log
port = http,https
maxretry = %[3]d
findtime = %[4]d
bantime = %[5]d
usedns = no
`, o.Zone, sts, p.Limit, p.WindowS, p.MitigationTimeoutS)
	return nil
}
