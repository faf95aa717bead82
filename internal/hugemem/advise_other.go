//go:build !linux

package hugemem

import "unsafe"

// enabled: elsewhere no advice is given.
const enabled = false

func advise(unsafe.Pointer, uintptr) {}
