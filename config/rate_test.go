package config_test

import (
	"strings"
	"testing"
	"time"

	"hookbox/config"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in        string
		perSecond float64
		err       string
	}{
		{"50/s", 50, ""},
		{"600/m", 10, ""},
		{"36/h", 0.01, ""},
		{"1/h", 1.0 / 3600, ""},
		{"1000000/s", 1e6, ""},
		{"50", 0, "no unit"},
		{"/s", 0, "whole number"},
		{"-5/s", 0, "whole number"},
		{"1.5/s", 0, "whole number"},
		{" 5/s", 0, "whole number"},
		{"0/s", 0, "greater than 0"},
		{"2000000/s", 0, "at most"},
		{"5/d", 0, "unit must be s, m or h"},
		{"5/sec", 0, "unit must be s, m or h"},
		{"5/S", 0, "unit must be s, m or h"},
	}
	for _, tt := range tests {
		r, err := config.ParseRate(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "N/s") {
				t.Errorf("ParseRate(%q) = %v, %v; want an error saying %q and the form", tt.in, r, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRate(%q): %v", tt.in, err)
			continue
		}
		if got := r.PerSecond(); got < tt.perSecond*0.999999 || got > tt.perSecond*1.000001 {
			t.Errorf("ParseRate(%q).PerSecond() = %v, want %v", tt.in, got, tt.perSecond)
		}
		if again, err := config.ParseRate(r.String()); err != nil || again != r {
			t.Errorf("ParseRate(%q).String() = %q, which parses to %v, %v", tt.in, r.String(), again, err)
		}
	}
	if (config.Rate{}).PerSecond() != 0 || (config.Rate{}).String() != "" {
		t.Errorf("the zero Rate is not no limit")
	}
	if r := (config.Rate{N: 3, Per: time.Minute}); r.String() != "3/m" {
		t.Errorf("String() = %q, want 3/m", r.String())
	}
}
