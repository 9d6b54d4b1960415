package config_test

import (
	"slices"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"hookbox/config"
)

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "10m", want: 10 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "30d", want: 30 * day},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "7d12h", want: 7*day + 12*time.Hour},
		{in: "1d30m", want: day + 30*time.Minute},
		{in: "0d", want: 0},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "", wantErr: true},
		{in: "30", wantErr: true},
		{in: "d", wantErr: true},
		{in: "1.d", wantErr: true},
		{in: ".5d", wantErr: true},
		{in: "5x", wantErr: true},
		{in: "-5s", wantErr: true},
		{in: "-1d", wantErr: true},
		{in: "1d-5h", wantErr: true},
		{in: "1d1d", wantErr: true},
		{in: " 5s", wantErr: true},
		{in: "1h2d", wantErr: true},
		{in: "200000d", wantErr: true},
		{in: "106751d24h", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := config.ParseDuration(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseDuration(%q) = %v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDuration(%q): %v, want %v", tt.in, err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestDuration_String(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{90 * time.Second, "1m30s"},
		{10 * time.Minute, "10m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{30 * 24 * time.Hour, "30d"},
		{36 * time.Hour, "1d12h"},
		{24*time.Hour + time.Second, "1d1s"},
	}
	for _, tt := range tests {
		got := config.Duration(tt.in).String()
		if got != tt.want {
			t.Errorf("Duration(%v).String() = %q, want %q", tt.in, got, tt.want)
		}
		back, err := config.ParseDuration(got)
		if err != nil || back != tt.in {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (round trip)", got, back, err, tt.in)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1MiB", want: 1 << 20},
		{in: "512KiB", want: 512 << 10},
		{in: "2GiB", want: 2 << 30},
		{in: "100", want: 100},
		{in: "1024B", want: 1024},
		{in: "1 MiB", want: 1 << 20},
		{in: "0", want: 0},
		{in: "", wantErr: true},
		{in: "MiB", wantErr: true},
		{in: "1KB", wantErr: true},
		{in: "1MB", wantErr: true},
		{in: "1mib", wantErr: true},
		{in: "1.5MiB", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "1TiB", wantErr: true},
		{in: "9223372036854775807GiB", wantErr: true},
		{in: "99999999999999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := config.ParseSize(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseSize(%q) = %d, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSize(%q): %v, want %d", tt.in, err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// TestTOMLValues decodes the custom types the way a config file holds them.
func TestTOMLValues(t *testing.T) {
	type doc struct {
		D config.Duration   `toml:"d"`
		S config.Size       `toml:"s"`
		L config.StringList `toml:"l"`
	}
	tests := []struct {
		name    string
		in      string
		want    doc
		wantErr bool
	}{
		{name: "Duration days", in: `d = "1.5d"`, want: doc{D: config.Duration(36 * time.Hour)}},
		{name: "Duration integer", in: `d = 30`, wantErr: true},
		{name: "Size string", in: `s = "512KiB"`, want: doc{S: 512 << 10}},
		{name: "Size integer", in: `s = 4096`, want: doc{S: 4096}},
		{name: "Size negative integer", in: `s = -1`, wantErr: true},
		{name: "Size float", in: `s = 1.5`, wantErr: true},
		{name: "StringList string", in: `l = "a"`, want: doc{L: config.StringList{"a"}}},
		{name: "StringList array", in: `l = ["a", "b"]`, want: doc{L: config.StringList{"a", "b"}}},
		{name: "StringList empty array", in: `l = []`, want: doc{L: config.StringList{}}},
		{name: "StringList integer", in: `l = 1`, wantErr: true},
		{name: "StringList mixed array", in: `l = ["a", 1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got doc
			_, err := toml.Decode(tt.in, &got)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Decode(%s) = %+v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.in, err)
			}
			if got.D != tt.want.D || got.S != tt.want.S || !slices.Equal(got.L, tt.want.L) {
				t.Fatalf("Decode(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSize_String(t *testing.T) {
	tests := []struct {
		in   config.Size
		want string
	}{
		{0, "0B"},
		{100, "100B"},
		{1 << 20, "1MiB"},
		{1536, "1536B"}, // 1.5KiB: not a whole number of KiB
		{64 << 10, "64KiB"},
		{2 << 30, "2GiB"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
	}
}
