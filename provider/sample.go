package provider

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// samples holds each provider's sample bodies, under samples/NAME/.
//
//go:embed samples
var samples embed.FS

// Sample is one realistic event of a provider, as the provider sends it:
// a body template, and what the provider adds around the body.
type Sample struct {
	// Type is the event's type as the provider names it; it fills {{type}}
	// and the type header of a provider that sends one.
	Type string
	// File is the body template's name under samples/ (Body).
	File string
	// ContentType is the body's; "" means application/json.
	ContentType string
	// Query is the query string the provider adds to the URL, a template
	// like the body (Mercado Pago's "data.id={{resource}}&type=payment");
	// "" for none.
	Query string
	// ID and Resource are an event id and a resource id of the provider's
	// shapes ("evt_…", a UUID, digits), for fresh ones made alike.
	ID, Resource string
	// Key and Version are where the body holds the resource's id and its
	// version (the event's time), as package location writes them; "" for
	// a body that has none, or that a location cannot read (a form).
	Key, Version string
}

// Body returns the sample's body template. A sample whose file is
// missing is a programmer's error, caught by the registry test: it
// returns nil.
func (s Sample) Body() []byte {
	b, err := samples.ReadFile("samples/" + s.File)
	if err != nil {
		return nil
	}
	return b
}

// ContentTypeOr is the sample's content type, application/json when it
// names none.
func (s Sample) ContentTypeOr() string {
	if s.ContentType == "" {
		return "application/json"
	}
	return s.ContentType
}

// Values fill a template: one event, in one of its deliveries.
type Values struct {
	ID, Resource, Type string
	// At is the event's time, which is also the version of the resource
	// it is about: a later event of the resource has a later time.
	At time.Time
	// Attempt is 1 for the event's first delivery, and counts the
	// provider's retries on from 2.
	Attempt int
}

// Placeholders are the names a template may use, each between {{ and }},
// and what each is filled with.
var Placeholders = []struct{ Name, Means string }{
	{"id", "the event's id"},
	{"resource", "the id of the resource the event is about"},
	{"type", "the event's type"},
	{"version", "the resource's version: the event's time in Unix seconds"},
	{"now", "the event's time, RFC 3339 in UTC"},
	{"now_unix", "the event's time in Unix seconds"},
	{"now_ms", "the event's time in Unix milliseconds"},
	{"attempt", "which delivery of the event this is: 1, then 2, 3, ... for retries"},
	{"retry", "how many deliveries came before this one: 0, 1, 2, ..."},
}

// Fill returns template with every placeholder replaced by v's value. An
// unknown name, or a {{ without its }}, is an error naming it; the values
// are inserted as they are (ids, times and numbers need no escaping in
// JSON strings or form values).
func Fill(template []byte, v Values) ([]byte, error) {
	var out bytes.Buffer
	rest := template
	for {
		i := bytes.Index(rest, []byte("{{"))
		if i < 0 {
			out.Write(rest)
			return out.Bytes(), nil
		}
		out.Write(rest[:i])
		end := bytes.Index(rest[i:], []byte("}}"))
		if end < 0 {
			return nil, errors.New("a {{ without its }}")
		}
		name := string(rest[i+2 : i+end])
		val, ok := v.value(name)
		if !ok {
			return nil, fmt.Errorf("unknown placeholder {{%s}} (known: %s)", name, placeholderNames())
		}
		out.WriteString(val)
		rest = rest[i+end+2:]
	}
}

func (v Values) value(name string) (string, bool) {
	switch name {
	case "id":
		return v.ID, true
	case "resource":
		return v.Resource, true
	case "type":
		return v.Type, true
	case "version", "now_unix":
		return strconv.FormatInt(v.At.Unix(), 10), true
	case "now":
		return v.At.UTC().Format(time.RFC3339), true
	case "now_ms":
		return strconv.FormatInt(v.At.UnixMilli(), 10), true
	case "attempt":
		return strconv.Itoa(max(v.Attempt, 1)), true
	case "retry":
		return strconv.Itoa(max(v.Attempt-1, 0)), true
	}
	return "", false
}

func placeholderNames() string {
	names := make([]string, len(Placeholders))
	for i, p := range Placeholders {
		names[i] = "{{" + p.Name + "}}"
	}
	return strings.Join(names, ", ")
}

// Retries is a provider's schedule of automatic retries of a delivery
// that failed.
type Retries struct {
	// Delays are the waits before each retry, each after the attempt
	// before it; none for a provider that does not retry.
	Delays []time.Duration
	// Note says where the schedule comes from: the provider's words, and
	// how Delays approximate them where it gives only a span ("8 times
	// over 4 hours").
	Note string
}

// Total is the time from the first attempt to the last retry.
func (r Retries) Total() time.Duration {
	var t time.Duration
	for _, d := range r.Delays {
		t += d
	}
	return t
}

// DefaultTimeout is how long a sender waits for an answer when its
// provider publishes no timeout (Provider.Timeout is zero).
const DefaultTimeout = 10 * time.Second

// genericRetries is the schedule of a provider that retries without
// publishing when; schemeRetries that of a scheme without a provider.
var (
	genericRetries = Retries{
		Delays: backoff(5, time.Minute, 0),
		Note:   "not published: a generic schedule, 5 retries doubling from 1 minute",
	}
	schemeRetries = Retries{Delays: genericRetries.Delays, Note: "no provider: a generic schedule, 5 retries doubling from 1 minute"}
)

// backoff is n delays doubling from first; with total set, they add up to
// about total (a provider's "n times over total, with exponential
// backoff"): capped where doubling from first would overshoot it, and
// starting later than first where it would fall short. Delays are whole
// seconds.
func backoff(n int, first, total time.Duration) []time.Duration {
	at := func(limit time.Duration) ([]time.Duration, time.Duration) {
		ds := make([]time.Duration, n)
		var sum time.Duration
		d := min(first, limit)
		for i := range ds {
			ds[i] = d.Round(time.Second)
			sum += ds[i]
			d = min(d, limit/2) * 2 // no overflow, however many
		}
		return ds, sum
	}
	if total <= 0 {
		ds, _ := at(1 << 62)
		return ds
	}
	if doublings := math.Exp2(float64(n)) - 1; float64(first)*doublings < float64(total) {
		// Too short uncapped: start later, so the doublings fill the span.
		first = time.Duration(float64(total) / doublings)
		ds, _ := at(total)
		return ds
	}
	lo, hi := first, total
	for hi-lo > time.Second {
		mid := (lo + hi) / 2
		if _, sum := at(mid); sum > total {
			hi = mid
		} else {
			lo = mid
		}
	}
	ds, _ := at(lo)
	return ds
}

// TimeoutOr is the provider's answer timeout, DefaultTimeout when it
// publishes none.
func (p Provider) TimeoutOr() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}
