package check_test

import (
	"fmt"

	"github.com/ratesweep/ratesweep/check"
)

// Two samples of a metric over replicates: did the median move significantly?
func ExampleMannWhitneyU() {
	before := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	after := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	r := check.MannWhitneyU(before, after)
	fmt.Printf("U = %g, p = %.4f (exact %v)\n", r.U, r.P, r.Exact)
	med, lo, hi, ok := check.MedianCI(before, 0.95)
	fmt.Printf("median %.3f, 95%% interval [%.2f, %.2f] (%v)\n", med, lo, hi, ok)
	// Output:
	// U = 35, p = 0.2544 (exact true)
	// median 1.415, 95% interval [0.80, 1.89] (true)
}
