package recommend

import (
	"context"

	"github.com/ratesweep/ratesweep/sweep"
)

// ReadRunWorst is ReadRun without the lists of clients cut (Measure.Clients
// and Run.Offered are nil): each policy keeps its worst legitimate client
// per replicate only, read in one streaming pass over the clients rows, so
// memory does not grow with the number of clients.
func ReadRunWorst(ctx context.Context, dir string) (*Run, error) {
	d, err := sweep.OpenRun(dir, sweep.OpenOptions{AllowIncomplete: true})
	if err != nil {
		return nil, err
	}
	return readRunList(ctx, d, false)
}
