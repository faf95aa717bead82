//go:build !linux

package hugemem

import "unsafe"

// enabled: elsewhere no advice is given.
const enabled = false

func advise(p, size uintptr) {}

func mapAligned(length uintptr) unsafe.Pointer { return nil }

func unmap(p, length uintptr) {}
