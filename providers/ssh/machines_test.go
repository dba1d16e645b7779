package ssh

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers"
)

const hostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The machines file in YAML and JSON: defaults filled, alike machines one
// offer with counted stock, prices exact in micro-dollars.
func TestMachinesFileOffers(t *testing.T) {
	yml := write(t, "machines.yaml", `machines:
  - {name: gpu-a, host: 192.0.2.10, key_path: /k, gpus: 8, accelerator: H100_80GB, vcpus: 64, memory_gb: 512, location: rack-1, price_per_hour: "20.00", host_key: "`+hostKey+`"}
  - {name: gpu-b, host: 192.0.2.11, port: 2222, user: ubuntu, key_path: /k, gpus: 8, accelerator: H100_80GB, vcpus: 64, memory_gb: 512, location: rack-1, price_per_hour: "20"}
  - {name: gpu-c, host: 192.0.2.12, key_path: /k, gpus: 4, accelerator: L40S, location: rack-2, location_name: Berlin, kind: vm, price_per_hour: "3.00"}
`)
	ms, err := LoadFile(yml)
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Port != 22 || ms[0].User != "root" || ms[0].PrivateIP != "192.0.2.10" || ms[0].Kind != "bare_metal" || ms[1].Port != 2222 {
		t.Errorf("defaults: %+v", ms[:2])
	}
	json := write(t, "machines.json", `{"machines":[{"name":"cpu-1","host":"h","key_path":"/k","location":"l","price_per_hour":"0.5"}]}`)
	if js, err := LoadFile(json); err != nil || js[0].Accelerator != "CPU" {
		t.Errorf("json: %+v %v", js, err)
	}
	p, err := New(Config{Machines: ms, AgentBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	offers, err := p.ListOffers(context.Background())
	if err != nil || len(offers) != 2 {
		t.Fatalf("offers: %+v %v", offers, err)
	}
	h100, l40s := offers[0], offers[1]
	if h100.Accelerator != "H100_80GB" || *h100.NodesAvailable != 2 || !h100.Available || h100.PerGPUHourUSD != 2_500_000 ||
		h100.MachineHourUSD() != 20_000_000 || h100.Provider != "ssh" || h100.MachineKind != providers.BareMetal {
		t.Errorf("H100 offer: %+v", h100)
	}
	if l40s.LocationName != "Berlin" || *l40s.NodesAvailable != 1 || l40s.PerGPUHourUSD != 750_000 {
		t.Errorf("L40S offer: %+v (3 $/h over 4 GPUs)", l40s)
	}
	// Asking for more than the stock is a capacity refusal, nothing placed.
	_, err = p.PlaceGroup(context.Background(), providers.PlaceRequest{GroupName: "cl_x", OfferID: h100.OfferID, Location: "rack-1", Count: 3,
		Agent: providers.AgentBootstrap{ServerURL: "http://s", Tokens: []string{"a", "b", "c"}}})
	if pe, ok := err.(*providers.Error); !ok || pe.Class != providers.ErrNoCapacity {
		t.Errorf("3 of 2: %v", err)
	}
	if offers, _ := p.ListOffers(context.Background()); *offers[0].NodesAvailable != 2 {
		t.Errorf("stock after a refusal: %d", *offers[0].NodesAvailable)
	}
	// A volume (V4) is refused as unsupported, nothing reserved.
	_, err = p.PlaceGroup(context.Background(), providers.PlaceRequest{GroupName: "cl_v", OfferID: h100.OfferID, Location: "rack-1", Count: 1,
		Agent: providers.AgentBootstrap{ServerURL: "http://s", Tokens: []string{"a"}}, Volume: &providers.Volume{ID: "vol_1", Name: "v", SizeGB: 10}})
	if pe, ok := err.(*providers.Error); !ok || pe.Class != providers.ErrUnsupported {
		t.Errorf("a placement with a volume: %v", err)
	}
	if offers, _ := p.ListOffers(context.Background()); *offers[0].NodesAvailable != 2 {
		t.Errorf("stock after the volume refusal: %d", *offers[0].NodesAvailable)
	}
	// Above the price ceiling the quote locked (OP1): refused, nothing placed.
	_, err = p.PlaceGroup(context.Background(), providers.PlaceRequest{GroupName: "cl_y", OfferID: h100.OfferID, Location: "rack-1", Count: 2,
		MaxMachineHourUSD: 19_999_999, Agent: providers.AgentBootstrap{ServerURL: "http://s", Tokens: []string{"a", "b"}}})
	if pe, ok := err.(*providers.Error); !ok || pe.Class != providers.ErrValidation || !strings.Contains(pe.Message, "ceiling") {
		t.Errorf("above the ceiling: %v", err)
	}
	if offers, _ := p.ListOffers(context.Background()); *offers[0].NodesAvailable != 2 {
		t.Errorf("stock after a price refusal: %d", *offers[0].NodesAvailable)
	}
	if err := p.TerminateGroup(context.Background(), "cl_unknown"); err != nil {
		t.Errorf("terminate of an unknown group: %v", err)
	}
	// L10, X5: owned machines are placed with their cluster only; a
	// machine the group does not hold is released already.
	_, err = p.PlaceNode(context.Background(), "cl_x", 2, providers.PlaceRequest{GroupName: "cl_x", OfferID: h100.OfferID, Location: "rack-1",
		Agent: providers.AgentBootstrap{ServerURL: "http://s", Tokens: []string{"c"}}})
	if !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("place one machine: %v, want ErrUnsupported", err)
	}
	if offers, _ := p.ListOffers(context.Background()); *offers[0].NodesAvailable != 2 {
		t.Errorf("stock after a refused PlaceNode: %d", *offers[0].NodesAvailable)
	}
	if err := p.ReleaseNode(context.Background(), "cl_unknown", "gpu-a"); err != nil {
		t.Errorf("release from an unknown group: %v", err)
	}
}

// Every problem of the file is named with its machine.
func TestMachinesFileErrors(t *testing.T) {
	yml := write(t, "machines.yaml", `machines:
  - {name: Bad_Name, host: "", key_path: "", gpus: 2, location: "", price_per_hour: "1,50", kind: container, host_key: "nope"}
  - {name: ok, host: h, key_path: /k, location: l, price_per_hour: "1.1234567"}
  - {name: ok, host: h, key_path: /k, location: l, price_per_hour: "1", port: 70000}
  - {name: odd, host: h, key_path: /k, location: l, gpus: 4, accelerator: L40S, price_per_hour: "3.000001"}
  - {name: ib, host: h, key_path: /k, location: l, gpus: 8, accelerator: H100_80GB, price_per_hour: "16", interconnect: infiniband}
  - {name: eth, host: h, key_path: /k, location: l, gpus: 8, accelerator: H100_80GB, price_per_hour: "16", nics: 8, nic_gbps: 400}
`)
	_, err := LoadFile(yml)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"machine 1 (Bad_Name): name must be", "host is required", "key_path is required", "accelerator is required",
		"location is required", `price_per_hour: "1,50" is not an amount`, "kind must be vm or bare_metal", "host_key:",
		`machine 2 (ok): price_per_hour: "1.1234567"`, "machine 3 (ok): name is used twice", "port 70000",
		"machine 4 (odd): price_per_hour 3.000001 does not split",
		"machine 5 (ib): interconnect infiniband needs nics and nic_gbps", "machine 6 (eth): nics and nic_gbps are for infiniband and roce"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := LoadFile(write(t, "m.yaml", "machines:\n  - {name: a, hots: h}\n")); err == nil || !strings.Contains(err.Error(), "hots") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := LoadFile(write(t, "m.toml", "")); err == nil {
		t.Error("a .toml file was accepted")
	}
}
