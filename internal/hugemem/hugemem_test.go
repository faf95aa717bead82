package hugemem

import "testing"

// Make returns a slice of the length and capacity asked, zeroed, whether
// or not its memory is advised.
func TestMake(t *testing.T) {
	for _, c := range []int{0, 1, 1000, 1 << 20, 3 << 20} {
		s := Make[int64](c/2, c)
		if len(s) != c/2 || cap(s) != c {
			t.Fatalf("Make(%d, %d): len %d cap %d", c/2, c, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("element %d is %d", i, v)
			}
		}
		s = append(s[:cap(s)], 1)
		if s[len(s)-1] != 1 {
			t.Fatal("append lost a value")
		}
	}
}
