package hugemem

import (
	"testing"
	"unsafe"
)

// Make returns a slice of the length and capacity asked, zeroed, that
// appends like any; a large one starts on a huge page boundary.
func TestMake(t *testing.T) {
	for _, c := range []int{0, 1, 1000, 1 << 17, 1 << 20, 3<<20 + 5, 5 << 20} {
		s := Make[int64](c/2, c)
		if len(s) != c/2 || cap(s) != c {
			t.Fatalf("Make(%d, %d): len %d cap %d", c/2, c, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("element %d is %d", i, v)
			}
		}
		if enabled && c*8 >= alignBytes && uintptr(unsafe.Pointer(unsafe.SliceData(s)))%page != 0 {
			t.Errorf("Make(%d, %d) starts off a huge page boundary", c/2, c)
		}
		s = append(s[:cap(s)], 1)
		if s[len(s)-1] != 1 {
			t.Fatal("append lost a value")
		}
	}
	b := Make[[3]byte](10, 1<<20) // a size that does not divide 2 MB
	if len(b) != 10 || cap(b) != 1<<20 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
}
