//go:build !linux

package handlers

import "time"

// Leftovers finds nothing here: it needs Linux's /proc.
func Leftovers(string) ([]Leftover, error) { return nil, nil }

// StopLeftovers has nothing to stop here.
func StopLeftovers([]Leftover, time.Duration) {}
