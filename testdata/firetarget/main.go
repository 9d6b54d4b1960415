// Command firetarget is the command target of the fire tests: given an
// event on stdin, it appends a line to the log named by its argument, of
// the event id (HOOKBOX_EVENT_ID) and the resource and version the body
// holds where its source's preset sample says ("-" for none),
// tab-separated. Sources are named after their presets (HOOKBOX_SOURCE).
// It is built apart from the test binary, which starts too slowly under
// the race detector to be run for every delivery.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"hookbox/location"
	"hookbox/provider"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: firetarget LOG")
		os.Exit(2)
	}
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(75)
	}
	key, version := "-", "-"
	if p, ok := provider.Lookup(os.Getenv("HOOKBOX_SOURCE")); ok {
		key = cmp.Or(find(p.Samples[0].Key, body), "-")
		version = cmp.Or(find(p.Samples[0].Version, body), "-")
	}
	f, err := os.OpenFile(os.Args[1], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(75)
	}
	// One write of a short line: appends of deliveries running at once do
	// not interleave.
	if _, err := fmt.Fprintf(f, "%s\t%s\t%s\n", os.Getenv("HOOKBOX_EVENT_ID"), key, version); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(75)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(75)
	}
}

// find is the value at a location of a body, "" for none.
func find(spec string, body []byte) string {
	if spec == "" {
		return ""
	}
	loc, err := location.Parse(spec, location.ID)
	if err != nil {
		return ""
	}
	v, _ := loc.Find(&location.Request{Body: body})
	return v
}
