//go:build !linux

package hugemem

// enabled: elsewhere no advice is given.
const enabled = false

func advise(p, size uintptr) {}
