package hugemem

import (
	"os"
	"strconv"
	"strings"
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

func TestAllocFree(t *testing.T) {
	for _, c := range []int{0, 10, 1 << 18, 3<<20 + 5} {
		s := Alloc[uint32](c/2, c)
		if len(s) != c/2 || cap(s) != c {
			t.Fatalf("Alloc(%d, %d): len %d cap %d", c/2, c, len(s), cap(s))
		}
		s = s[:c]
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("element %d is %d", i, s[i])
			}
			s[i] = uint32(i)
		}
		for i := range s {
			if s[i] != uint32(i) {
				t.Fatalf("element %d reads %d", i, s[i])
			}
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		_, mapped := mappings.Load(p)
		if want := enabled && c*4 >= minBytes; mapped != want {
			t.Errorf("Alloc(%d): mapped %v, want %v", c, mapped, want)
		}
		if mapped && p%page != 0 {
			t.Errorf("Alloc(%d) starts off a huge page boundary", c)
		}
		if m := Mapped(); mapped && m < int64(c*4) || !mapped && m != 0 {
			t.Errorf("Alloc(%d): Mapped() %d", c, m)
		}
		Free(s)
		Free(s) // a second time: nothing
		if m := Mapped(); m != 0 {
			t.Errorf("Alloc(%d): Mapped() %d after Free", c, m)
		}
		if _, still := mappings.Load(p); still {
			t.Errorf("Alloc(%d): still mapped after Free", c)
		}
		if mapped && inMaps(t, p) {
			t.Errorf("Alloc(%d): %#x is in /proc/self/maps after Free", c, p)
		}
	}
}

// inMaps reports whether address p lies in a mapping of /proc/self/maps.
func inMaps(t *testing.T, p uintptr) bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		lo, hi, ok := strings.Cut(strings.Fields(line + " x")[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < z {
			return true
		}
	}
	return false
}
