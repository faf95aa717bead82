//go:build !linux

package hugemem

import "unsafe"

// advise does nothing where transparent huge pages are not advised.
func advise(unsafe.Pointer, uintptr) {}
