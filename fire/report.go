package fire

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the results as a table, one row a scenario, then one
// line for each result that is not ok saying why.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	timeout := "TIMEOUT"
	if len(results) > 0 {
		timeout = "IN " + shortDuration(results[0].Timeout.D())
	}
	fmt.Fprintf(tw, "SCENARIO\tRESULT\tSENT\tANSWERS\tP99\t%s\tEFFECTS\tVERSION\n", timeout)
	for _, r := range results {
		if r.Verdict == Skip {
			fmt.Fprintf(tw, "%s\t%s\t0\t-\t-\t-\t-\t-\n", r.Scenario, r.Verdict)
			continue
		}
		texts := make([]string, len(r.Answers))
		for i, a := range r.Answers {
			texts[i] = answerText(a)
		}
		inTime := "no"
		if r.InTime {
			inTime = "yes"
		}
		effects := make([]string, 0, len(r.Events))
		for _, e := range r.Events {
			if e.Effects != nil {
				effects = append(effects, fmt.Sprint(*e.Effects))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Verdict, len(r.Answers), summarize(texts),
			shortDuration(r.P99.D()), inTime, orDash(strings.Join(effects, ", ")), orDash(r.Version))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Verdict != OK && r.Detail != "" {
			if _, err := fmt.Fprintf(w, "%s: %s: %s\n", r.Scenario, r.Verdict, r.Detail); err != nil {
				return err
			}
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortDuration is d for a table: 850µs, 12ms, 1.2s, 20s.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// WriteJSON writes one JSON object a result, one a line.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// WriteJUnit writes the results as a JUnit XML report: one test suite,
// named suite, with one test case a scenario, failed for DOUBLE, LOST,
// STALE and FAIL, skipped for skip; an acked case passes, its output
// saying the effects were not counted.
func WriteJUnit(w io.Writer, suite, classname string, results []Result) error {
	s := junitSuite{Name: suite, Tests: len(results)}
	var total time.Duration
	for _, r := range results {
		c := junitCase{Name: r.Scenario, Classname: classname, Time: seconds(r.Elapsed.D())}
		total += r.Elapsed.D()
		switch {
		case Failed(r.Verdict):
			s.Failures++
			c.Failure = &junitFailure{Message: r.Verdict + ": " + r.Detail, Type: r.Verdict, Text: caseText(r)}
		case r.Verdict == Skip:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: r.Detail}
		default:
			c.SystemOut = caseText(r)
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// caseText is a scenario's answers and effects, for a JUnit case.
func caseText(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Scenario, r.Verdict)
	if r.Detail != "" {
		fmt.Fprintf(&b, " (%s)", r.Detail)
	}
	fmt.Fprintf(&b, "\nresource %s\n", r.ResourceID)
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s version %d", e.ID, e.Version)
		if e.Effects != nil {
			fmt.Fprintf(&b, ": effect ran %d times", *e.Effects)
		}
		b.WriteByte('\n')
	}
	for _, a := range r.Answers {
		fmt.Fprintf(&b, "attempt %d: %s in %s\n", a.Attempt, answerText(a), shortDuration(a.Latency.D()))
	}
	return b.String()
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}
