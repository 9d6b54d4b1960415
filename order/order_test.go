package order_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"hookbox/order"
)

func TestRank_Order(t *testing.T) {
	// Each version is smaller than the next.
	ascending := []string{
		"-1e9", "-12.5", "-12.25", "-12", "-1", "-0.5", "0", "0.001", "0.5", "1",
		"1.5", "2", "10", "99", "100", "1000.0001",
		"1700000000", "2023-11-14T22:13:20.5Z", "1700000001", "2023-11-14T23:13:21.1+01:00",
		"1700000001.25", "9007199254740993", "9007199254740994", "1e100",
	}
	for i := 0; i+1 < len(ascending); i++ {
		a, okA := order.Rank(ascending[i])
		b, okB := order.Rank(ascending[i+1])
		if !okA || !okB {
			t.Fatalf("Rank(%q) ok=%v, Rank(%q) ok=%v; want both readable", ascending[i], okA, ascending[i+1], okB)
		}
		if a >= b {
			t.Errorf("Rank(%q)=%q not below Rank(%q)=%q", ascending[i], a, ascending[i+1], b)
		}
	}
}

func TestRank_Equal(t *testing.T) {
	for _, pair := range [][2]string{
		{"1", "1.0"}, {"1", "+1"}, {"10", "1e1"}, {"0.10", "0.1"}, {"-0", "0"}, {"007", "7"},
		{"1700000000", "2023-11-14T22:13:20Z"}, {"2023-11-14T22:13:20Z", "2023-11-14T23:13:20+01:00"},
	} {
		a, _ := order.Rank(pair[0])
		b, _ := order.Rank(pair[1])
		if a != b {
			t.Errorf("Rank(%q)=%q, Rank(%q)=%q; want equal", pair[0], a, pair[1], b)
		}
	}
}

func TestRank_Unreadable(t *testing.T) {
	for _, v := range []string{"", " ", "abc", "1.2.3", "1e", "e5", "--1", "0x10", "2023-13-01T00:00:00Z", "2023-11-14", "1e99999", "."} {
		if r, ok := order.Rank(v); ok {
			t.Errorf("Rank(%q) = %q, true; want unreadable", v, r)
		}
	}
}

// Random integers rank as they compare.
func TestRank_Integers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nums := make([]int64, 2000)
	for i := range nums {
		nums[i] = r.Int64() - r.Int64()/2
		if i%3 == 0 {
			nums[i] = int64(r.IntN(1000)) - 500
		}
	}
	byRank := slices.Clone(nums)
	slices.SortFunc(byRank, func(a, b int64) int {
		ra, _ := order.Rank(strconv.FormatInt(a, 10))
		rb, _ := order.Rank(strconv.FormatInt(b, 10))
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	if !slices.IsSorted(byRank) {
		t.Fatal("integers sorted by rank are not in numeric order")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]order.Mode{"": order.None, "none": order.None, "fifo": order.FIFO, "latest": order.Latest, "coalesce": order.Coalesce} {
		if got, err := order.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := order.ParseMode("FIFO"); err == nil {
		t.Error("ParseMode(FIFO): no error, want one")
	}
}
