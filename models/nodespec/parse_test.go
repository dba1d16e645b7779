package nodespec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseAllReduceFixtures(t *testing.T) {
	tests := []struct {
		file                  string
		version               string
		nGPUs                 int
		minBytes, maxBytes    int64
		devices               int
		hosts                 []string
		rows                  int
		avg                   float64
		largestSize           int64
		largestOOP, largestIP Measurement
		firstRow              AllReduceRow
		deviceName            string
		peak                  float64
		warmup, iters         int
	}{
		{
			file: "nccl_all_reduce_perf_1node_8x_rtx4090_sweep.txt", nGPUs: 8, minBytes: 8, maxBytes: 134217728,
			devices: 8, hosts: []string{"<REDACTED>"}, rows: 25, avg: 4.85265,
			largestSize: 134217728,
			largestOOP:  Measurement{TimeUS: 16253, AlgBW: 8.26, BusBW: 14.45},
			largestIP:   Measurement{TimeUS: 16227, AlgBW: 8.27, BusBW: 14.47},
			firstRow: AllReduceRow{SizeBytes: 8, Count: 2, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 38.83}, InPlace: Measurement{TimeUS: 40.43}},
			deviceName: "NVIDIA GeForce RTX 4090", peak: 15.04, warmup: 5, iters: 20,
		},
		{
			file: "nccl_all_reduce_perf_2node_16x_a100_10G.txt", nGPUs: 1, minBytes: 10737418240, maxBytes: 10737418240,
			devices: 16, hosts: []string{"inst-xxxxx-gpu4-ol89", "inst-yyyyy-gpu4-ol89"}, rows: 1, avg: 220.921,
			largestSize: 10737418240,
			largestOOP:  Measurement{TimeUS: 90330, AlgBW: 118.87, BusBW: 222.88},
			largestIP:   Measurement{TimeUS: 91945, AlgBW: 116.78, BusBW: 218.96},
			firstRow: AllReduceRow{SizeBytes: 10737418240, Count: 2684354560, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 90330, AlgBW: 118.87, BusBW: 222.88},
				InPlace:    Measurement{TimeUS: 91945, AlgBW: 116.78, BusBW: 218.96}},
			deviceName: "NVIDIA A100-SXM4-40GB", peak: 222.88, warmup: 5, iters: 20,
		},
		{
			file: "nccl_all_reduce_perf_2node_16x_h100_sweep.txt", nGPUs: 1, minBytes: 8, maxBytes: 8589934592,
			devices: 16, hosts: []string{"ztan-mig-235z", "ztan-mig-gq73"}, rows: 31, avg: 70.742,
			largestSize: 8589934592,
			largestOOP:  Measurement{TimeUS: 47535, AlgBW: 180.71, BusBW: 338.82},
			largestIP:   Measurement{TimeUS: 47743, AlgBW: 179.92, BusBW: 337.35},
			firstRow: AllReduceRow{SizeBytes: 8, Count: 2, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 135.8}, InPlace: Measurement{TimeUS: 123.5}},
			deviceName: "NVIDIA H100 80GB HBM3", peak: 338.82, warmup: 5, iters: 20,
		},
		{
			file: "nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt", version: "2.18.2", nGPUs: 1, minBytes: 1048576, maxBytes: 134217728,
			devices: 2, hosts: []string{"nid007106", "nid007109"}, rows: 8, avg: 14.9966,
			largestSize: 134217728,
			largestOOP:  Measurement{TimeUS: 5871.07, AlgBW: 22.86, BusBW: 22.86},
			largestIP:   Measurement{TimeUS: 5867.43, AlgBW: 22.88, BusBW: 22.88},
			firstRow: AllReduceRow{SizeBytes: 1048576, Count: 262144, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: Measurement{TimeUS: 339.61, AlgBW: 3.09, BusBW: 3.09},
				InPlace:    Measurement{TimeUS: 335.85, AlgBW: 3.12, BusBW: 3.12}},
			deviceName: "NVIDIA GH200 120GB", peak: 22.88, warmup: 1, iters: 20,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := ParseAllReduce(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("ParseAllReduce: %v", err)
			}
			if r.Version != tt.version || r.NThreads != 1 || r.NGPUs != tt.nGPUs || r.MinBytes != tt.minBytes || r.MaxBytes != tt.maxBytes {
				t.Errorf("header: version %q nThread %d nGpus %d min %d max %d", r.Version, r.NThreads, r.NGPUs, r.MinBytes, r.MaxBytes)
			}
			if r.Warmup != tt.warmup || r.Iters != tt.iters {
				t.Errorf("warmup %d iters %d, want %d %d", r.Warmup, r.Iters, tt.warmup, tt.iters)
			}
			if len(r.Devices) != tt.devices {
				t.Errorf("%d devices, want %d", len(r.Devices), tt.devices)
			}
			for i, d := range r.Devices {
				if d.Rank != i || d.Name != tt.deviceName {
					t.Errorf("device %d = %+v", i, d)
				}
			}
			if !slices.Equal(r.Hosts(), tt.hosts) {
				t.Errorf("hosts %v, want %v", r.Hosts(), tt.hosts)
			}
			if len(r.Rows) != tt.rows {
				t.Errorf("%d rows, want %d", len(r.Rows), tt.rows)
			}
			if r.AvgBusBW != tt.avg {
				t.Errorf("avg bus bandwidth %v, want %v", r.AvgBusBW, tt.avg)
			}
			if r.OutOfBounds != 0 || !r.OutOfBoundsOK || r.Wrong() != 0 || len(r.Failures) != 0 {
				t.Errorf("out of bounds %d ok %v wrong %d failures %v", r.OutOfBounds, r.OutOfBoundsOK, r.Wrong(), r.Failures)
			}
			l := r.Largest()
			if l.SizeBytes != tt.largestSize || l.OutOfPlace != tt.largestOOP || l.InPlace != tt.largestIP {
				t.Errorf("largest = %+v, want size %d oop %+v ip %+v", l, tt.largestSize, tt.largestOOP, tt.largestIP)
			}
			if r.Rows[0] != tt.firstRow {
				t.Errorf("first row = %+v, want %+v", r.Rows[0], tt.firstRow)
			}
			if r.PeakBusBW() != tt.peak {
				t.Errorf("peak busbw %v, want %v", r.PeakBusBW(), tt.peak)
			}
			// Sizes grow row by row.
			for i := 1; i < len(r.Rows); i++ {
				if r.Rows[i].SizeBytes <= r.Rows[i-1].SizeBytes {
					t.Errorf("row %d size %d after %d", i, r.Rows[i].SizeBytes, r.Rows[i-1].SizeBytes)
				}
			}
		})
	}
}

func TestParseAllReduceErrors(t *testing.T) {
	full := readFixture(t, "nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt")
	cut := full[:strings.Index(full, "# Out of bounds")]
	row := "     1048576        262144     float     sum      -1   339.61    3.09    3.09       0   335.85    3.12    3.12       0\n"
	tests := []struct {
		name    string
		in      string
		wantErr error
		rows    int
	}{
		{"empty", "", ErrEmpty, 0},
		{"blank", " \n\t\n", ErrEmpty, 0},
		{"not nccl", "bash: all_reduce_perf: command not found\n", ErrFormat, 0},
		{"header only", full[:strings.Index(full, "#  Rank")], ErrFormat, 0},
		{"truncated", cut, ErrTruncated, 8},
		{"nccl failure", "# nThread 1 nGpus 1 minBytes 8 maxBytes 8\nnode-0: Test NCCL failure common.cu:958 'unhandled system error'\n", ErrTestFailed, 0},
		{"failure after rows", cut + " .. node-1 pid 12: Test CUDA failure common.cu:100 'out of memory'\n# Avg bus bandwidth    : 1.0\n", ErrTestFailed, 8},
		{"wrong results", strings.Replace(full, "3.12    3.12       0", "3.12    3.12       7", 1), ErrTestFailed, 8},
		{"out of bounds", strings.Replace(full, "values : 0 OK", "values : 3 FAILED", 1), ErrTestFailed, 8},
		{"bad avg", row + "# Avg bus bandwidth    : fast\n", ErrFormat, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseAllReduce(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(r.Rows) != tt.rows {
				t.Errorf("%d rows, want %d", len(r.Rows), tt.rows)
			}
		})
	}
}

func TestParseAllReduceVariants(t *testing.T) {
	// NCCL_DEBUG=INFO lines interleaved, CRLF line ends, validation off
	// (N/A), an old table without the root column, and bfloat16.
	in := "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\r\n" +
		"node-0:123:123 [0] NCCL INFO Bootstrap : Using ens1:10.77.0.1<0>\r\n" +
		"           8             2  bfloat16     sum      -1    12.50    0.00    0.00    N/A    12.00    0.00    0.00    N/A\r\n" +
		"          16             4     float     sum    13.00    0.00    0.00      0    12.00    0.00    0.00      0\r\n" +
		"node-1:77:77 [3] NCCL INFO comm 0x5 rank 11 nranks 16 - Init COMPLETE\r\n" +
		"# Out of bounds values : 0 OK\r\n" +
		"# Avg bus bandwidth    : 0 \r\n"
	r, err := ParseAllReduce(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []AllReduceRow{
		{SizeBytes: 8, Count: 2, Type: "bfloat16", RedOp: "sum", Root: -1,
			OutOfPlace: Measurement{TimeUS: 12.5, Wrong: -1}, InPlace: Measurement{TimeUS: 12, Wrong: -1}},
		{SizeBytes: 16, Count: 4, Type: "float", RedOp: "sum", Root: -1,
			OutOfPlace: Measurement{TimeUS: 13}, InPlace: Measurement{TimeUS: 12}},
	}
	if !slices.Equal(r.Rows, want) {
		t.Errorf("rows = %+v, want %+v", r.Rows, want)
	}
	if r.Largest().SizeBytes != 16 || (AllReduceResult{}).Largest() != (AllReduceRow{}) {
		t.Error("Largest")
	}
	if got := GBpsToGbitps(0.25); got != 2 {
		t.Errorf("GBpsToGbitps(0.25) = %v", got)
	}
}

func TestParseSMIList(t *testing.T) {
	gpus, err := ParseSMIList(readFixture(t, "nvidia_smi_L_8x_a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs, want 8", len(gpus))
	}
	for i, g := range gpus {
		if g.Index != i || g.Name != "NVIDIA A100-SXM4-80GB" || !strings.HasPrefix(g.UUID, "GPU-") || g.MemoryTotalMiB != -1 {
			t.Errorf("GPU %d = %+v", i, g)
		}
	}
	if gpus[0].UUID != "GPU-55748b5b-32df-bbd9-d0f6-f50980c12af8" || gpus[7].UUID != "GPU-5c084fc6-2373-fab1-7e48-aa2ae120117c" {
		t.Errorf("UUIDs %q … %q", gpus[0].UUID, gpus[7].UUID)
	}
	c := Cluster{GPUsPerNode: 8}
	if err := c.CheckGPUs(gpus); err != nil {
		t.Error(err)
	}
	c.GPUsPerNode = 4
	if err := c.CheckGPUs(gpus); err == nil || !strings.Contains(err.Error(), "lists 8 GPUs") {
		t.Errorf("CheckGPUs(8 GPUs) on a 4-GPU shape = %v", err)
	}

	// MIG lines are skipped; no GPUs and a driver failure are told apart.
	mig := "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)\n  MIG 1g.5gb     Device  0: (UUID: MIG-bbbb)\n"
	if gpus, err := ParseSMIList(mig); err != nil || len(gpus) != 1 || gpus[0].UUID != "GPU-aaaa" {
		t.Errorf("MIG: %+v, %v", gpus, err)
	}
	if gpus, err := ParseSMIList("No devices were found\n"); err != nil || len(gpus) != 0 {
		t.Errorf("no devices: %+v, %v", gpus, err)
	}
	if _, err := ParseSMIList("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"); !errors.Is(err, ErrFormat) {
		t.Errorf("driver failure: %v", err)
	}
	if _, err := ParseSMIList(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}

func TestParseSMIQuery(t *testing.T) {
	gpus, err := ParseSMIQuery(readFixture(t, "nvidia_smi_query_gpu_name_memtotal_driver_csv_8x_a100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 8 {
		t.Fatalf("%d GPUs, want 8", len(gpus))
	}
	for i, g := range gpus {
		want := GPU{Index: i, Name: "NVIDIA A100-SXM4-80GB", MemoryTotalMiB: 81920, MemoryUsedMiB: -1, UtilizationPercent: -1, DriverVersion: "570.133.20"}
		if g != want {
			t.Errorf("GPU %d = %+v, want %+v", i, g, want)
		}
	}

	gpus, err = ParseSMIQuery(readFixture(t, "nvidia_smi_query_gpu_index_name_memtotal_memused_util_csv_2x_a6000.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, Name: "NVIDIA RTX A6000", MemoryTotalMiB: 49140, MemoryUsedMiB: 299, UtilizationPercent: 0},
		{Index: 1, Name: "NVIDIA RTX A6000", MemoryTotalMiB: 49140, MemoryUsedMiB: 11, UtilizationPercent: 0},
	}
	if !slices.Equal(gpus, want) {
		t.Errorf("A6000 = %+v, want %+v", gpus, want)
	}

	// nounits, unknown values, an unread column, uuid.
	in := "index, uuid, memory.total [MiB], utilization.gpu [%], pci.bus_id\n3, GPU-x, 81559, [N/A], 00000000:53:00.0\n"
	gpus, err = ParseSMIQuery(in)
	if err != nil || len(gpus) != 1 || gpus[0] != (GPU{Index: 3, UUID: "GPU-x", MemoryTotalMiB: 81559, MemoryUsedMiB: -1, UtilizationPercent: -1}) {
		t.Errorf("nounits: %+v, %v", gpus, err)
	}
	for name, tt := range map[string]struct {
		in   string
		want error
	}{
		"empty":    {"", ErrEmpty},
		"noheader": {"NVIDIA A100-SXM4-80GB, 81920 MiB, 570.133.20\n", ErrFormat},
		"ragged":   {"name, memory.total [MiB]\nNVIDIA A100, 81920 MiB, extra\n", ErrFormat},
	} {
		if _, err := ParseSMIQuery(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tt.want)
		}
	}
	if gpus, err := ParseSMIQuery("No devices were found\n"); err != nil || len(gpus) != 0 {
		t.Errorf("no devices: %+v, %v", gpus, err)
	}
}

func TestParseSMITable(t *testing.T) {
	tests := []struct {
		file         string
		driver, cuda string
		used, total  int64
	}{
		{"nvidia_smi_default_8x_h100_driver535.txt", "535.183.01", "12.2", 0, 81559},
		{"nvidia_smi_default_8x_h100_driver550_gpu_table_only.txt", "550.90.07", "12.4", 1, 81559},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			gpus, err := ParseSMITable(readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(gpus) != 8 {
				t.Fatalf("%d GPUs, want 8", len(gpus))
			}
			for i, g := range gpus {
				want := GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", MemoryTotalMiB: tt.total, MemoryUsedMiB: tt.used,
					UtilizationPercent: 0, DriverVersion: tt.driver, CUDAVersion: tt.cuda}
				if g != want {
					t.Errorf("GPU %d = %+v, want %+v", i, g, want)
				}
			}
		})
	}
	full := readFixture(t, "nvidia_smi_default_8x_h100_driver535.txt")
	banner := full[:strings.Index(full, "|   0 ")]
	if _, err := ParseSMITable(banner); !errors.Is(err, ErrTruncated) {
		t.Errorf("banner only: %v", err)
	}
	if _, err := ParseSMITable("hello\n"); !errors.Is(err, ErrFormat) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := ParseSMITable(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
}

// FuzzParsers: no input makes a parser panic.
func FuzzParsers(f *testing.F) {
	for _, name := range []string{
		"nccl_all_reduce_perf_2node_2x_gh200_v2.18.2.txt",
		"nvidia_smi_L_8x_a100.txt",
		"nvidia_smi_query_gpu_index_name_memtotal_memused_util_csv_2x_a6000.txt",
		"nvidia_smi_default_8x_h100_driver550_gpu_table_only.txt",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, _ := ParseAllReduce(s)
		_, _, _, _ = r.Largest(), r.PeakBusBW(), r.Hosts(), r.Wrong()
		_, _ = ParseSMIList(s)
		_, _ = ParseSMIQuery(s)
		_, _ = ParseSMITable(s)
	})
}
