//go:build unix && !linux

package sweep

// adviseHuge does nothing: transparent huge pages on request are Linux's.
func adviseHuge([]byte) {}
