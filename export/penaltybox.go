package export

import (
	"fmt"
	"math"

	"github.com/ratesweep/ratesweep/model"
)

// The penalty box (block_s, docs/penalty-box.md) in the targets that have
// one. HAProxy: a second stick table holds the blocked keys, each entry
// created by the request the limit denies and expiring block_s later; a
// request of a key in it is denied before the limit's table tracks it, so
// the limit does not see it and resumes with its counter when the entry
// expires. The other targets have no penalty box: their export drops
// block_s (Nearest) and says so.

// penaltyBoxTargets are the targets whose configuration has a penalty box.
var penaltyBoxTargets = map[string]bool{"haproxy": true}

// boxExpressible reports whether target can configure p's penalty box (or
// p has none).
func boxExpressible(p model.Policy, target string) bool {
	return p.BlockS == 0 || (penaltyBoxTargets[target] && p.BlockLevels == nil && haproxyBlockOK(p.BlockS))
}

// haproxyBlockOK reports whether HAProxy can hold a block of s seconds: a
// table's expire, whole ms up to its longest timer.
func haproxyBlockOK(s float64) bool {
	ms := s * 1000
	return ms >= 1 && ms <= maxHAProxyS*1000 && math.Abs(ms-math.Round(ms)) < 1e-6
}

// translateBox is Translate for a policy with a penalty box: the policy
// without it translated, the box put back where the target has one, else
// dropped (Nearest) with why.
func translateBox(p model.Policy, target string) (model.Policy, Fit, string, error) {
	bare := p
	bare.BlockS, bare.BlockLevels = 0, nil
	q, fit, why, err := Translate(bare, target)
	if err != nil {
		return q, fit, why, err
	}
	if boxExpressible(p, target) {
		q.BlockS = p.BlockS
		return q, fit, why, nil
	}
	lack := fmt.Sprintf("%s has no penalty box: the export rejects only while the limit is exceeded, it does not block a key for block_s=%g after a rejection", target, p.BlockS)
	switch {
	case penaltyBoxTargets[target] && p.BlockLevels != nil:
		lack = fmt.Sprintf("%s's blocked-keys table has one expiry: block_levels (longer blocks for keys blocked before) are left out, every block lasts block_s=%g", target, p.BlockS)
		q.BlockS = p.BlockS
	case penaltyBoxTargets[target]:
		lack = fmt.Sprintf("HAProxy's table expiry is whole ms up to %d s: block_s=%g is left out", maxHAProxyS, p.BlockS)
	}
	if why != "" {
		lack += "; " + why
	}
	return q, Nearest, lack, nil
}

// writeHAProxyBox writes the HAProxy configuration of a limit (its table
// line, the rules that count and deny: denyIf is the deny's condition,
// after is what follows the deny) with a penalty box of p.BlockS.
func writeHAProxyBox(r *Result, o Options, p model.Policy, typ, fetch, table, denyIf, after string) {
	block := o.Zone + "_block"
	r.Notes = append(r.Notes, fmt.Sprintf("penalty box: the request the limit denies puts its key in table %s, which expires it %s later; until then every request of the key is denied before the limit's table tracks it, so the limit does not count it and resumes with its counter when the block ends (the model's block_s)", block, haproxyTime(int64(math.Round(p.BlockS*1000)))))
	r.Config = fmt.Sprintf(`# a section of its own for the blocked keys (HAProxy 2.x)
backend %[1]s
    stick-table type %[2]s size 1m expire %[3]s

# in the frontend
    %[4]s
    # a key in the blocked table is denied, unseen by the limit
    http-request deny deny_status 429 if { %[5]s,in_table(%[1]s) }
    http-request track-sc0 %[5]s
    # the request the limit denies starts the key's block
    http-request track-sc1 %[5]s table %[1]s if { %[6]s }
    http-request deny deny_status 429 if { %[6]s }
%[7]s`, block, typ, haproxyTime(int64(math.Round(p.BlockS*1000))), table, fetch, denyIf, after)
}
