package recommend

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// secondsUnit is the unit of a check on time (legit_blocked_s).
const secondsUnit = "s"

// blockedCheck checks the seconds legitimate clients spent in a penalty
// box's blocks against bound (--max-legit-blocked-s).
func blockedCheck(bound float64, v Interval, named bool) Check {
	v = orPoint(v, v.Mean)
	c := Check{Value: v.Mean, Unit: secondsUnit, Bound: bound, Margin: bound - v.Mean}
	c.Crosses = c.Margin >= 0 && v.Hi > bound
	if named {
		c.Constraint = fmt.Sprintf("legitimate time blocked <= %s s", strconv.FormatFloat(bound, 'f', -1, 64))
	}
	return c
}

// ParseSeconds reads a bound in seconds (>= 0), as --max-legit-blocked-s
// takes it: "600" or "600s".
func ParseSeconds(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "s"), 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number of seconds (>= 0)", s)
	}
	return v, nil
}
