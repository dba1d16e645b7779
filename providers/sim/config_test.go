package sim

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

func TestLoadConfigJSONAndYAMLAgree(t *testing.T) {
	var loaded []Config
	for _, file := range []string{"testdata/sim.json", "testdata/sim.yaml"} {
		t.Run(file, func(t *testing.T) {
			cfg, err := LoadConfig(file)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if got := cfg.BootTimes[providers.VM].D(); got != 5*time.Minute {
				t.Errorf("vm boot = %s, want 5m", got)
			}
			if got := cfg.BootTimes[providers.Container].D(); got != 90*time.Second {
				t.Errorf("container boot = %s, want 90s", got)
			}
			if len(cfg.Locations) != 2 || len(cfg.Locations[0].Offers) != 2 {
				t.Fatalf("locations = %+v", cfg.Locations)
			}
			h100 := cfg.Locations[0].Offers[0]
			if h100.NodesAvailable == nil || *h100.NodesAvailable != 12 || h100.PerGPUHourUSD != 2_490_000 {
				t.Errorf("h100 offer = %+v", h100)
			}
			r := cfg.Locations[1].Offers[0]
			if r.NodesAvailable != nil || r.Available == nil || *r.Available {
				t.Errorf("4090 offer stock = %v/%v, want null count and available false", r.NodesAvailable, r.Available)
			}
			loaded = append(loaded, cfg)
		})
	}
	if len(loaded) == 2 && !reflect.DeepEqual(loaded[0], loaded[1]) {
		t.Errorf("JSON and YAML configs differ:\n%+v\n%+v", loaded[0], loaded[1])
	}
}

func TestLoadedConfigDrivesTheCatalog(t *testing.T) {
	cfg, err := LoadConfig("testdata/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := New(cfg)
	offers, err := c.ListOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"us-test-1.h100.8x": DefaultBareMetalBoot, // not in boot_times: default
		"us-test-1.l40s.1x": 3 * time.Minute,      // per-offer override
		"eu-test-1.4090.2x": 90 * time.Second,     // boot_times
	}
	for _, o := range offers {
		if o.BootTime != want[o.OfferID] {
			t.Errorf("%s boot = %s, want %s", o.OfferID, o.BootTime, want[o.OfferID])
		}
	}
	gw := offers[2]
	if gw.PublicIPs || gw.Gateway != "jump@gw.eu-test-1.sim.clusterdeck.test:22" || !gw.Community || gw.Available {
		t.Errorf("gateway offer = %+v", gw)
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), "no such file"},
		{"unknown extension", write("sim.toml", "x = 1"), "unknown extension"},
		{"bad json", write("bad.json", "{"), "sim: config"},
		{"unknown json field", write("f.json", `{"locations": [], "zones": 1}`), `unknown field "zones"`},
		{"unknown yaml field", write("f.yaml", "zones: 1\n"), "field zones not found"},
		{"bad duration", write("d.yaml", "boot_times: {vm: soon}\n"), `invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadConfig error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"unknown kind", func(c *Config) { c.Locations[0].Offers[0].MachineKind = "vps" }, `unknown machine_kind "vps"`},
		{"unknown interconnect", func(c *Config) { c.Locations[0].Offers[0].Interconnect = "nvlink" }, `unknown interconnect "nvlink"`},
		{"gpus per machine", func(c *Config) { c.Locations[0].Offers[0].GPUsPerNode = 3 }, "gpus_per_node must be 1, 2, 4 or 8, got 3"},
		{"negative gpu price", func(c *Config) { c.Locations[0].Offers[0].PerGPUHourUSD = -1 }, "per_gpu_hour_usd must be a positive"},
		{"negative disk price", func(c *Config) { c.Locations[0].Offers[0].DiskGBHourUSD = -5 }, "disk_gb_hour_usd must not be negative"},
		{"duplicate offer id", func(c *Config) { c.Locations[1].Offers[0].ID = offCounted }, `duplicate offer id "t1.h100.8x.vm"`},
		{"duplicate location", func(c *Config) { c.Locations[1].ID = locT1 }, `duplicate location id "t-1"`},
		{"negative stock", func(c *Config) { c.Locations[0].Offers[0].NodesAvailable = ptr(-1) }, "nodes_available must not be negative"},
		{"count and yes/no", func(c *Config) { c.Locations[0].Offers[0].Available = ptr(true) }, "not both"},
		{"bad gateway", func(c *Config) { c.Locations[1].Gateway = "gw.example:22" }, "user@host:port"},
		{"boot kind", func(c *Config) { c.BootTimes = map[string]Duration{"vps": Duration(time.Minute)} }, `boot_times: unknown machine kind "vps"`},
		{"no locations", func(c *Config) { c.Locations = nil }, "at least one location"},
		{"missing id", func(c *Config) { c.Locations[0].Offers[1].ID = "" }, "id is required"},
		// X13: the fabric checks are judged by the cards.
		{"infiniband without cards", func(c *Config) { c.Locations[0].Offers[0].NICs = 0 }, "interconnect infiniband needs nics and nic_gbps"},
		{"roce without a line rate", func(c *Config) {
			c.Locations[0].Offers[0].Interconnect, c.Locations[0].Offers[0].NICGbps = providers.RoCE, 0
		}, "interconnect roce needs nics and nic_gbps"},
		{"ethernet with cards", func(c *Config) { c.Locations[0].Offers[2].NICs, c.Locations[0].Offers[2].NICGbps = 1, 100 }, "ethernet machines meet on the encrypted overlay"},
		{"negative cards", func(c *Config) { c.Locations[0].Offers[0].NICs = -8 }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.change(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := testConfig()
	cfg.Locations[0].Offers[0].MachineKind = "vps"
	cfg.Locations[1].Offers[0].GPUsPerNode = 16
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	for _, want := range []string{"locations[0].offers[0] (t1.h100.8x.vm)", "locations[1].offers[0] (t2.l40s.2x.gw)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted an invalid config")
		}
	}()
	New(Config{})
}

func TestDefaultConfigIsValidAndRealistic(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	if n := len(cfg.Locations); n < 8 || n > 12 {
		t.Errorf("%d locations, want 8 to 12", n)
	}
	offers, err := New(cfg).ListOffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var bigCount, smallCount, nullYes, nullNo, community, gateway bool
	for _, o := range offers {
		for _, k := range []string{o.Accelerator, o.MachineKind, o.Interconnect, "gpus:" + string(rune('0'+o.GPUsPerNode))} {
			seen[k] = true
		}
		switch {
		case o.NodesAvailable == nil && o.Available:
			nullYes = true
		case o.NodesAvailable == nil:
			nullNo = true
		case *o.NodesAvailable > 64:
			bigCount = true
		case *o.NodesAvailable <= 12:
			smallCount = true
		}
		if o.Community {
			community = true
			if o.Accelerator != accRTX4090 && o.Accelerator != accL40S {
				t.Errorf("community offer %s sells %s", o.OfferID, o.Accelerator)
			}
		}
		if !o.PublicIPs {
			gateway = true
			if !strings.HasPrefix(o.Gateway, "jump@gw."+o.Location+".sim.clusterdeck.test:") {
				t.Errorf("%s gateway = %q", o.OfferID, o.Gateway)
			}
		}
		if o.LocationName == "" || o.LocationName == o.Location {
			t.Errorf("%s has no human location name", o.OfferID)
		}
		// A 500 GB disk costs a few cents an hour; GPUs dominate the price.
		if cents := 500 * o.DiskGBHourUSD / 10_000; cents < 3 || cents > 10 {
			t.Errorf("%s: 500 GB disk costs %d cents/h", o.OfferID, cents)
		}
		if o.MachineHourUSD() <= int64(o.GPUsPerNode)*o.PerGPUHourUSD {
			t.Errorf("%s: machine price %d misses its disk", o.OfferID, o.MachineHourUSD())
		}
	}
	for _, want := range []string{
		accH200, accH100, accA100, accL40S, accRTX4090,
		providers.VM, providers.BareMetal, providers.Container,
		providers.Ethernet, providers.InfiniBand, providers.RoCE,
		"gpus:1", "gpus:2", "gpus:4", "gpus:8",
	} {
		if !seen[want] {
			t.Errorf("default catalog has no %s offer", want)
		}
	}
	for name, ok := range map[string]bool{
		"count > 64": bigCount, "small count": smallCount, "null count saying yes": nullYes,
		"null count saying no": nullNo, "community host": community, "gateway": gateway,
	} {
		if !ok {
			t.Errorf("default catalog has no offer with %s", name)
		}
	}
}

func TestDefaultBootTimes(t *testing.T) {
	offers, _ := New(DefaultConfig()).ListOffers(context.Background())
	want := map[string]time.Duration{
		providers.Container: time.Minute, providers.VM: 4 * time.Minute, providers.BareMetal: 12 * time.Minute,
	}
	for _, o := range offers {
		if o.BootTime != want[o.MachineKind] {
			t.Errorf("%s (%s) boots in %s, want %s", o.OfferID, o.MachineKind, o.BootTime, want[o.MachineKind])
		}
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{`"90s"`, 90 * time.Second, false},
		{`"4m"`, 4 * time.Minute, false},
		{`120`, 2 * time.Minute, false},
		{`"soon"`, 0, true},
		{`true`, 0, true},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalJSON([]byte(tt.in))
		if (err != nil) != tt.err || (!tt.err && d.D() != tt.want) {
			t.Errorf("UnmarshalJSON(%s) = %s, %v; want %s, error %v", tt.in, d, err, tt.want, tt.err)
		}
	}
	b, _ := Duration(90 * time.Second).MarshalJSON()
	if string(b) != `"1m30s"` {
		t.Errorf("MarshalJSON = %s", b)
	}
}
