package report

import (
	"testing"

	"github.com/ratesweep/ratesweep/model"
)

// Every registered algorithm draws in a colour of its own, none grey.
func TestAlgorithmColorsDistinct(t *testing.T) {
	seen := map[[3]uint8]model.Algorithm{}
	for _, a := range model.Algorithms {
		c := algoColor(a)
		k := [3]uint8{c.R, c.G, c.B}
		if b, dup := seen[k]; dup {
			t.Errorf("%s draws in %s's colour #%02x%02x%02x", a, b, c.R, c.G, c.B)
		}
		if c == colGrey && a != model.AllOf {
			t.Errorf("%s draws in grey", a)
		}
		seen[k] = a
	}
}
