package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
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

func (b *runner) columns() []Column {
	switch b.Mode {
	case ModeE2E:
		return []Column{
			col("acks_per_s", "acks/s", "%.0f"), col("p99_ms", "p99 ms", "%.1f"),
			col("delivered_per_s", "delivered/s", "%.0f"), col("drain_s", "drain s", "%.2f"),
			col("per_s", "backlog/s", "%.0f"), col("rss_mib", "RSS MiB", "%.1f"),
			col("cpu_us_per_ack", "CPU µs", "%.0f"), col("sink_cpu_us", "sink µs", "%.0f"),
			col("writes_per_commit", "writes/commit", "%.1f"),
		}
	case ModeCommand:
		return []Column{
			col("per_s", "runs/s", "%.0f"), col("events", "runs", "%.0f"), col("seconds", "seconds", "%.2f"),
			col("rss_mib", "RSS MiB", "%.1f"), col("cpu_us_per_ack", "CPU µs/run", "%.0f"),
			col("writes_per_commit", "writes/commit", "%.1f"),
		}
	}
	cols := []Column{
		col("acks_per_s", "acks/s", "%.0f"), col("p50_ms", "p50 ms", "%.2f"), col("p90_ms", "p90 ms", "%.2f"),
		col("p99_ms", "p99 ms", "%.2f"), col("errors", "errors", "%.0f"), col("rss_mib", "RSS MiB", "%.1f"),
		col("cpu_us_per_ack", "CPU µs/ack", "%.0f"), col("wal_mib", "WAL MiB", "%.1f"),
	}
	if b.Mode == ModeRate {
		cols = append(cols, col("dropped", "dropped", "%.0f"), col("lag_p99_ms", "send lag p99 ms", "%.2f"))
	}
	return cols
}

func col(key, head, format string) Column {
	return Column{Key: key, Head: head, Format: format}
}

// cpus is the CPUs this process may use (GOMAXPROCS follows a container's
// CPU limit): the figure the header and the drain's bound both give.
func cpus() int { return runtime.GOMAXPROCS(0) }

func (b *runner) describe() string {
	load := fmt.Sprintf("%d connections", b.Conns)
	switch b.Mode {
	case ModeRate:
		load = fmt.Sprintf("%.0f req/s over %d connections", b.Rate, b.Conns)
	case ModeE2E:
		load += fmt.Sprintf(", %d workers", b.Workers)
	case ModeCommand:
		load = fmt.Sprintf("%d workers", b.Workers)
	}
	return fmt.Sprintf("mode %s, %s, %s a server, %d round(s), %d-byte GitHub-signed bodies, synchronous=full; %d CPUs, %s %s/%s",
		b.Mode, load, b.Duration, b.Rounds, len(b.req.Body), cpus(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func (b *runner) report() error {
	gs := b.goals()
	if b.JSON {
		enc := json.NewEncoder(b.stdout)
		enc.Encode(map[string]any{"type": "run", "mode": b.Mode, "conns": b.Conns, "duration_s": b.Duration.Seconds(),
			"rounds": b.Rounds, "rate": b.Rate, "prefill": b.Prefill, "backlog": b.Backlog, "body_size": len(b.req.Body),
			"workers": b.Workers, "cpus": cpus(), "go": runtime.Version(), "notes": b.notes})
		for _, r := range b.rows {
			line := map[string]any{"type": "round", "round": r.Round, "server": r.Server}
			for k, v := range r.Values {
				line[k] = v
			}
			enc.Encode(line)
		}
		for _, s := range Servers(b.rows) {
			line := map[string]any{"type": "summary", "server": s}
			for _, c := range b.columns() {
				if vs := Values(b.rows, s, c.Key); len(vs) > 0 {
					line[c.Key] = SpreadOf(vs)
				}
			}
			enc.Encode(line)
		}
		for _, g := range gs {
			enc.Encode(map[string]any{"type": "goal", "name": g.name, "value": g.value, "want": g.want, "met": g.ok})
		}
		for _, d := range b.depths {
			enc.Encode(map[string]any{"type": "queue_depth", "round": d.Round, "every_s": d.Every, "samples": d.Samples})
		}
		return nil
	}
	w := b.stdout
	fmt.Fprintf(w, "hookbox bench: %s\n\n", b.describe())
	cols := b.columns()
	if err := WriteRounds(w, b.rows, cols); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := WriteSummary(w, b.rows, cols); err != nil {
		return err
	}
	if len(gs) > 0 {
		fmt.Fprintln(w)
		for _, g := range gs {
			met := "met"
			if !g.ok {
				met = "NOT met"
			}
			fmt.Fprintf(w, "%-40s %s   goal %s: %s\n", g.name, FormatSpread(g.value, "%.2f"), g.want, met)
		}
	}
	for _, d := range b.depths {
		// At most about 30 samples on a line; --json has them all.
		step := max(1, (len(d.Samples)+29)/30)
		var parts []string
		for i := 0; i < len(d.Samples); i += step {
			parts = append(parts, strconv.Itoa(int(d.Samples[i][1])))
		}
		fmt.Fprintf(w, "\nqueue depth, round %d, every %.2fs from load start: %s", d.Round, d.Every*float64(step), strings.Join(parts, " "))
	}
	if len(b.depths) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range b.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyValues is a row's latency columns from h.
func latencyValues(h *Histogram) map[string]float64 {
	return map[string]float64{
		"p50_ms": ms(h.Percentile(0.50)), "p90_ms": ms(h.Percentile(0.90)), "p99_ms": ms(h.Percentile(0.99)), "max_ms": ms(h.Max()),
	}
}
