package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is one server measured in one round.
type Row struct {
	Round  int
	Server string
	Values map[string]float64
}

// Column is one column of a results table.
type Column struct {
	Key    string // key in Row.Values
	Head   string
	Format string // fmt verb for the value, e.g. "%.0f"
}

// Spread is the median of a value over rounds with its minimum and maximum.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"rounds"`
}

// SpreadOf summarises vs; the median of an even count is the mean of the
// middle two.
func SpreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Values returns key of server's rows in round order.
func Values(rows []Row, server, key string) []float64 {
	var out []float64
	for _, r := range rows {
		if v, ok := r.Values[key]; ok && r.Server == server {
			out = append(out, v)
		}
	}
	return out
}

// Ratio returns num.numKey / den.denKey, round by round, summarised.
func Ratio(rows []Row, num, numKey, den, denKey string) Spread {
	byRound := map[int]float64{}
	for _, r := range rows {
		if v, ok := r.Values[denKey]; ok && r.Server == den && v != 0 {
			byRound[r.Round] = v
		}
	}
	var out []float64
	for _, r := range rows {
		if d, ok := byRound[r.Round]; ok && r.Server == num {
			if v, ok := r.Values[numKey]; ok {
				out = append(out, v/d)
			}
		}
	}
	return SpreadOf(out)
}

// Servers returns the server names of rows in first-seen order.
func Servers(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if !slices.Contains(out, r.Server) {
			out = append(out, r.Server)
		}
	}
	return out
}

// WriteRounds writes one line per row.
func WriteRounds(w io.Writer, rows []Row, cols []Column) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"round", "server"}
	for _, c := range cols {
		head = append(head, c.Head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		line := []string{fmt.Sprint(r.Round), r.Server}
		for _, c := range cols {
			if v, ok := r.Values[c.Key]; ok {
				line = append(line, fmt.Sprintf(c.Format, v))
			} else {
				line = append(line, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	return tw.Flush()
}

// WriteSummary writes, per server, each column's median with its min–max.
func WriteSummary(w io.Writer, rows []Row, cols []Column) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"median (min–max)"}
	for _, c := range cols {
		head = append(head, c.Head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, s := range Servers(rows) {
		line := []string{s}
		for _, c := range cols {
			vs := Values(rows, s, c.Key)
			if len(vs) == 0 {
				line = append(line, "-")
				continue
			}
			line = append(line, FormatSpread(SpreadOf(vs), c.Format))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t")+"\t")
	}
	return tw.Flush()
}

// FormatSpread formats "median (min–max)", or just the value for one round.
func FormatSpread(s Spread, format string) string {
	if s.N <= 1 || s.Min == s.Max {
		return fmt.Sprintf(format, s.Median)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}
