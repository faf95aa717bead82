package export

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ratesweep/ratesweep/model"
)

// A cloudflarePlan is what one Cloudflare plan accepts in a rate limiting
// rule.
type cloudflarePlan struct {
	name string
	// periods are the counting periods the plan accepts, s.
	periods []int
	// timeouts are the mitigation timeouts it accepts, s; 0 is the
	// throttle behaviour (block only the requests above the rate).
	timeouts []int
	// characteristics: counting by anything but the IP (a header, or the
	// data centre alone for one global count).
	characteristics bool
	// countingExpression: a custom counting expression.
	countingExpression bool
	// rules is how many rate limiting rules a zone holds.
	rules int
}

// cloudflarePlans are Cloudflare's documented limits per plan: the
// "Availability" table of the WAF's rate limiting rules documentation
// (developers.cloudflare.com/waf/rate-limiting-rules/, features by plan).
// Periods and timeouts are those of the model (model.CloudflarePeriods,
// model.CloudflareTimeouts) up to each plan's longest: Free 10 s only; Pro
// periods up to 1 min, timeouts up to 1 h; Business up to 10 min and
// 1 day; Enterprise up to 65,535 s and 1 day, and the throttle. Counting by
// a header, or by nothing but the data centre, needs Enterprise with
// Advanced Rate Limiting; a custom counting expression, Business or above.
// Enterprise's rule count depends on the contract (100 documented).
var cloudflarePlans = []cloudflarePlan{
	{"free", []int{10}, []int{10}, false, false, 1},
	{"pro", []int{10, 60}, []int{10, 60, 120, 300, 600, 3600}, false, false, 2},
	{"business", []int{10, 60, 120, 300, 600}, []int{10, 60, 120, 300, 600, 3600, 86400}, false, true, 5},
	{"enterprise", []int{10, 60, 120, 300, 600, 3600}, []int{0, 10, 60, 120, 300, 600, 3600, 86400}, false, true, 100},
	{"enterprise-arl", []int{10, 60, 120, 300, 600, 3600}, []int{0, 10, 60, 120, 300, 600, 3600, 86400}, true, true, 100},
}

// CloudflarePlans names the plans --plan accepts, smallest first.
func CloudflarePlans() []string {
	names := make([]string, len(cloudflarePlans))
	for i, pl := range cloudflarePlans {
		names[i] = pl.name
	}
	return names
}

// refuses says which of the plan's limits a rule breaks ("" when the plan
// holds it): period and timeout in s, byIPOnly whether it counts by the
// client address, counting whether it has a counting expression, rules
// the rules written.
func (pl cloudflarePlan) refuses(period, timeout int, byIPOnly, counting bool, rules int) string {
	switch {
	case !slices.Contains(pl.periods, period):
		return fmt.Sprintf("period %d s: the %s plan accepts %s", period, pl.name, secondsList(pl.periods))
	case !slices.Contains(pl.timeouts, timeout) && timeout == 0:
		return fmt.Sprintf("mitigation_timeout 0 (throttle requests above the rate): the %s plan blocks for a timeout of %s; the throttle needs enterprise", pl.name, secondsList(pl.timeouts))
	case !slices.Contains(pl.timeouts, timeout):
		return fmt.Sprintf("mitigation_timeout %d s: the %s plan accepts %s", timeout, pl.name, secondsList(pl.timeouts))
	case !byIPOnly && !pl.characteristics:
		return fmt.Sprintf("characteristics: the %s plan counts by the IP only (--key ip); another key needs enterprise-arl", pl.name)
	case counting && !pl.countingExpression:
		return fmt.Sprintf("counting_expression (count_if): the %s plan counts every request the rule matches; counting by the response needs business or above", pl.name)
	case rules > pl.rules:
		return fmt.Sprintf("%d rules: the %s plan holds %d", rules, pl.name, pl.rules)
	}
	return ""
}

func secondsList(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ") + " s"
}

// cloudflarePlanFor returns the plan named (--plan), or with name "" the
// smallest plan that holds the rule (counting: it has a counting
// expression); err names the limit the rule breaks.
func cloudflarePlanFor(name string, p model.Policy, byIPOnly, counting bool) (pl cloudflarePlan, chosen bool, err error) {
	period, timeout := int(p.PeriodS), p.MitigationTimeoutS
	if name == "" {
		for _, pl := range cloudflarePlans {
			if pl.refuses(period, timeout, byIPOnly, counting, 1) == "" {
				return pl, true, nil
			}
		}
		return pl, true, fmt.Errorf("cloudflare: no plan holds %s", p.Canonical())
	}
	for _, pl := range cloudflarePlans {
		if pl.name == name {
			if why := pl.refuses(period, timeout, byIPOnly, counting, 1); why != "" {
				return pl, false, fmt.Errorf("--plan %s cannot hold %s: %s", name, p.Canonical(), why)
			}
			return pl, false, nil
		}
	}
	return pl, false, fmt.Errorf("--plan: %s is not a Cloudflare plan (%s)", quoteShort(name), strings.Join(CloudflarePlans(), ", "))
}

// planNamed is the plan called name.
func planNamed(name string) (cloudflarePlan, bool) {
	for _, pl := range cloudflarePlans {
		if pl.name == name {
			return pl, true
		}
	}
	return cloudflarePlan{}, false
}

// fitPlan is q, a rule translated from another policy, within plan pl:
// the plan's period nearest q's (log scale) at q's rate, and where the plan
// has no throttle its shortest mitigation timeout; why says what changed
// ("" when nothing did).
func fitPlan(q model.Policy, pl cloudflarePlan) (model.Policy, string) {
	var why []string
	if !slices.Contains(pl.periods, int(q.PeriodS)) {
		rate := float64(q.RequestsPerPeriod) / q.PeriodS
		period := nearestLog(pl.periods, q.PeriodS)
		q.PeriodS, q.RequestsPerPeriod = float64(period), min(max(1, int64(math.Round(rate*float64(period)))), 1_000_000_000)
		why = append(why, fmt.Sprintf("the %s plan's period nearest is %d s", pl.name, period))
	}
	if !slices.Contains(pl.timeouts, q.MitigationTimeoutS) {
		q.MitigationTimeoutS = pl.timeouts[0]
		why = append(why, fmt.Sprintf("the %s plan has no throttle: a key over the rate is blocked for %d s (mitigation_timeout)", pl.name, q.MitigationTimeoutS))
	}
	return q, strings.Join(why, "; ")
}

// cloudflareCounting is the counting expression of count_if's statuses:
// the rule counts a request when the origin's response has one of them
// (http.response.code, runs of consecutive statuses as ranges), e.g.
// "http.response.code in {401 403 500..599}".
func cloudflareCounting(countIf string) (string, error) {
	sts, err := model.CountIfStatuses(countIf)
	if err != nil {
		return "", err
	}
	var parts []string
	for i := 0; i < len(sts); {
		j := i
		for j+1 < len(sts) && sts[j+1] == sts[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d..%d", sts[i], sts[j]))
		} else {
			parts = append(parts, fmt.Sprint(sts[i]))
		}
		i = j + 1
	}
	return "http.response.code in {" + strings.Join(parts, " ") + "}", nil
}
