//go:build !linux

package harden

// Process does nothing outside Linux.
func Process() error { return nil }

// Dumpable is unknown outside Linux: reported as true.
func Dumpable() (bool, error) { return true, nil }
