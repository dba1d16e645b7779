package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/domain"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// GPU telemetry (N3, R1): every node's agent samples its GPUs
// with nvidia-smi every GPUSampleEvery and sends the samples, and the new
// XID lines of the kernel log, with its heartbeat (GPUReport). The server
// keeps compact points per cluster, machine (rank) and GPU (index):
//
//   - gpu_points: one row per GPU per minute, the mean of that minute's
//     samples, kept GPUPointsKeep (48 h);
//   - gpu_hours: one row per GPU per hour, rolled up from the minute
//     points by the gpu-rollup job, kept GPUHoursKeep (30 days);
//   - gpu_machines: one row per machine: its GPUs as last seen (index and
//     UUID), the last uncorrectable ECC count per GPU, its recent XID
//     lines and whether it has no nvidia-smi.
//
// Times are unix seconds (the start of the minute or hour): an integer
// compares, groups and indexes the same way on SQLite and PostgreSQL and
// takes 8 bytes. A value nvidia-smi printed as "[N/A]" or "[Not
// Supported]" is unknown (NULL), never zero.
const (
	GPUSampleEvery = 30 * time.Second
	GPUPointsKeep  = 48 * time.Hour
	GPUHoursKeep   = 30 * 24 * time.Hour

	// Bounds of one heartbeat's GPUReport; a report beyond them is
	// refused whole (ReportError "gpu").
	MaxGPUSamplesPerReport = 512 // e.g. 8 GPUs × 64 samples: 32 minutes of backlog
	MaxGPUIndex            = 63
	MaxXIDLinesPerReport   = 64
	MaxXIDLineLen          = 500
	// GPUSampleMaxAge is how old a sample may be when it arrives (an
	// agent that could not reach the server sends its backlog, bounded);
	// GPUSampleMaxSkew how far ahead of the server's clock.
	GPUSampleMaxAge  = time.Hour
	GPUSampleMaxSkew = 5 * time.Minute

	// keptXIDLines is how many XID lines a machine's row keeps.
	keptXIDLines = 20
)

// GPUSample is one GPU's reading: nvidia-smi --query-gpu with
// utilization.gpu, memory.used, memory.total, temperature.gpu, power.draw,
// clocks.sm, ecc.errors.uncorrected.volatile.total and
// clocks_throttle_reasons.active. Nil fields are unknown.
type GPUSample struct {
	At             time.Time
	Index          int    // nvidia-smi's index, 0..MaxGPUIndex
	UUID           string // "GPU-…"; identifies the GPU across reports
	UtilPct        *int   // 0..100
	MemUsedMiB     *int
	MemTotalMiB    *int
	TempC          *int
	PowerW         *int // rounded to the watt
	SMClockMHz     *int
	ECCUncorrected *int64 // volatile total since the driver loaded
	Throttle       *int64 // clocks_throttle_reasons.active bitmask
}

// XIDLine is one kernel log line reporting an NVIDIA XID ("NVRM: Xid
// (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.").
type XIDLine struct {
	At   time.Time `json:"at"`
	Code int       `json:"code"` // the XID number
	Text string    `json:"text"`
}

// GPUReport is what one heartbeat carries about the machine's GPUs.
type GPUReport struct {
	Samples []GPUSample
	XIDs    []XIDLine
	// NoSMI, when not empty, says why the machine reports no samples
	// ("nvidia-smi: command not found"); the agent sends it once.
	NoSMI string
}

// Validate refuses a report beyond the bounds or with values no GPU
// reports, naming the first problem.
func (r GPUReport) Validate(now time.Time) error {
	if len(r.Samples) > MaxGPUSamplesPerReport {
		return fmt.Errorf("%d samples in one heartbeat, at most %d", len(r.Samples), MaxGPUSamplesPerReport)
	}
	if len(r.XIDs) > MaxXIDLinesPerReport {
		return fmt.Errorf("%d XID lines in one heartbeat, at most %d", len(r.XIDs), MaxXIDLinesPerReport)
	}
	if len(r.NoSMI) > 1000 {
		return errors.New("noSmi longer than 1000 characters")
	}
	in := func(name string, v *int, lo, hi int) error {
		if v != nil && (*v < lo || *v > hi) {
			return fmt.Errorf("%s %d outside %d..%d", name, *v, lo, hi)
		}
		return nil
	}
	for i, s := range r.Samples {
		err := errors.Join(
			in("index", &s.Index, 0, MaxGPUIndex),
			in("utilization", s.UtilPct, 0, 100),
			in("memory used", s.MemUsedMiB, 0, 1<<22),
			in("memory total", s.MemTotalMiB, 0, 1<<22),
			in("temperature", s.TempC, -40, 200),
			in("power", s.PowerW, 0, 10000),
			in("SM clock", s.SMClockMHz, 0, 10000))
		switch {
		case err != nil:
		case s.At.IsZero() || s.At.Before(now.Add(-GPUSampleMaxAge)) || s.At.After(now.Add(GPUSampleMaxSkew)):
			err = fmt.Errorf("time %s is not within the last hour", s.At.UTC().Format(time.RFC3339))
		case len(s.UUID) > 64 || strings.ContainsFunc(s.UUID, func(r rune) bool { return r < 0x21 || r > 0x7e }):
			err = errors.New("uuid must be at most 64 printable characters")
		case s.ECCUncorrected != nil && *s.ECCUncorrected < 0:
			err = errors.New("negative ECC count")
		}
		if err != nil {
			return fmt.Errorf("samples[%d]: %w", i, err)
		}
	}
	for i, x := range r.XIDs {
		if x.Code <= 0 || x.Code > 1000 || len(x.Text) > MaxXIDLineLen {
			return fmt.Errorf("xids[%d]: want an XID code 1..1000 and a line of at most %d characters", i, MaxXIDLineLen)
		}
	}
	return nil
}

// GPUPoint is one stored point of one GPU: the mean of N samples (a
// minute's in gpu_points, an hour's minute points in gpu_hours; for the
// hour, temperature is the highest, the ECC count the last and the
// throttle reasons every reason seen). Nil = unknown.
type GPUPoint struct {
	ClusterID string `gorm:"primaryKey;size:32"`
	Rank      int    `gorm:"primaryKey;autoIncrement:false"`
	GPU       int    `gorm:"primaryKey;autoIncrement:false"` // nvidia-smi's index
	At        int64  `gorm:"primaryKey;autoIncrement:false"` // unix seconds, start of the minute (hour)
	N         int    `gorm:"not null"`
	Util      *int
	MemUsed   *int // MiB
	MemTotal  *int // MiB
	Temp      *int // °C
	Power     *int // W
	SMClock   *int `gorm:"column:sm_clock"` // MHz
	ECC       *int64
	Throttle  *int64
}

// TableName implements gorm's Tabler.
func (GPUPoint) TableName() string { return "gpu_points" }

// GPUHour is an hourly point (the same columns as GPUPoint).
type GPUHour GPUPoint

// TableName implements gorm's Tabler.
func (GPUHour) TableName() string { return "gpu_hours" }

// GPUMachine is one machine's GPU state as its reports left it.
type GPUMachine struct {
	ClusterID string                 `gorm:"primaryKey;size:32"`
	Rank      int                    `gorm:"primaryKey;autoIncrement:false"`
	OrgID     string                 `gorm:"size:32;not null"`
	GPUs      JSON[[]knownGPU]       `gorm:"column:gpus;type:text;not null"` // [{index, uuid}], as last seen
	ECC       JSON[map[string]int64] `gorm:"column:ecc;type:text;not null"`  // {uuid: uncorrectable count}
	XIDs      JSON[[]XIDLine]        `gorm:"column:xids;type:text;not null"` // newest last, at most 20
	NoSMI     string                 `gorm:"column:no_smi;size:1000;not null"`
	LastAt    *time.Time
}

// TableName implements gorm's Tabler.
func (GPUMachine) TableName() string { return "gpu_machines" }

// knownGPU is one GPU of a machine as last seen.
type knownGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
}

func up0980GpuTelemetry(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	point := func(table string) string {
		return `CREATE TABLE ` + table + ` (
			cluster_id varchar(32) NOT NULL,
			rank smallint NOT NULL,
			gpu smallint NOT NULL,
			at bigint NOT NULL,
			n integer NOT NULL,
			util smallint,
			mem_used integer,
			mem_total integer,
			temp smallint,
			power integer,
			sm_clock integer,
			ecc bigint,
			throttle bigint,
			PRIMARY KEY (cluster_id, rank, gpu, at)
		)`
	}
	for _, q := range []string{
		point("gpu_points"),
		"CREATE INDEX idx_gpu_points_at ON gpu_points (at)",
		point("gpu_hours"),
		"CREATE INDEX idx_gpu_hours_at ON gpu_hours (at)",
		`CREATE TABLE gpu_machines (
			cluster_id varchar(32) NOT NULL,
			rank integer NOT NULL,
			org_id varchar(32) NOT NULL,
			gpus text NOT NULL,
			ecc text NOT NULL,
			xids text NOT NULL,
			no_smi varchar(1000) NOT NULL DEFAULT '',
			last_at ` + ts + `,
			PRIMARY KEY (cluster_id, rank)
		)`,
		"ALTER TABLE cluster_nodes ADD COLUMN hw_fault varchar(1000) NOT NULL DEFAULT ''",
		"ALTER TABLE cluster_nodes ADD COLUMN hw_fault_at " + ts,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// ---- writing (one heartbeat) ----

// RecordGPUReport stores one heartbeat's GPU report of node n: its samples
// folded into minute points in ONE multi-row statement (a point already
// stored for that minute is averaged with them), the machine's state, and
// a hardware fault it reveals (BrokenGPUFault: a new uncorrectable ECC
// error, a fatal XID, a GPU gone from nvidia-smi) on the node for the
// health pass (R1). Heartbeat calls it in its transaction after
// validating the report; call it inside a transaction.
func (s *Store) RecordGPUReport(ctx context.Context, c Cluster, n ClusterNode, r GPUReport) error {
	if len(r.Samples) == 0 && len(r.XIDs) == 0 && r.NoSMI == "" {
		return nil
	}
	db := s.db.WithContext(ctx)
	if rows := minutePoints(c.ID, n.Rank, r.Samples); len(rows) > 0 {
		err := db.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "cluster_id"}, {Name: "rank"}, {Name: "gpu"}, {Name: "at"}},
			DoUpdates: clause.Assignments(mergeAssignments()),
			// X19: a point folds at most MaxSamplesPerGPUMinute samples; a
			// report that would pass it leaves the stored point as it is.
			Where: clause.Where{Exprs: []clause.Expression{gorm.Expr("gpu_points.n + excluded.n <= ?", MaxSamplesPerGPUMinute)}},
		}).Create(&rows).Error
		if err != nil {
			return err
		}
	}
	var m GPUMachine
	err := db.Where("cluster_id = ? AND rank = ?", c.ID, n.Rank).Take(&m).Error
	fresh := errors.Is(err, gorm.ErrRecordNotFound)
	if err != nil && !fresh {
		return err
	}
	if fresh {
		m = GPUMachine{ClusterID: c.ID, Rank: n.Rank, OrgID: c.OrgID, GPUs: JSONOf([]knownGPU{}), ECC: JSONOf(map[string]int64{}), XIDs: JSONOf([]XIDLine{})}
	}
	fault := m.apply(r)
	if r.NoSMI != "" {
		m.NoSMI = truncate(r.NoSMI, 1000)
	} else if len(r.Samples) > 0 {
		m.NoSMI = ""
	}
	now := s.Now()
	m.LastAt = &now
	if err := db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&m).Error; err != nil { // Save would take rank 0 for "no key"
		return err
	}
	if fault == "" {
		return nil
	}
	return db.Model(&ClusterNode{}).Where("id = ? AND hw_fault = ''", n.ID).
		Updates(map[string]any{"hw_fault": truncate(fault, 1000), "hw_fault_at": now}).Error
}

// forgetGPUMachine drops a machine's GPU state: a replacement is a new
// machine with other GPUs.
func (s *Store) forgetGPUMachine(ctx context.Context, clusterID string, rank int) error {
	db := s.db.WithContext(ctx)
	if err := db.Model(&NodeGPUCheck{}).Where("cluster_id = ? AND rank = ?", clusterID, rank).
		Update("gpu_indexes", "").Error; err != nil { // X19: its GPUs are fixed at its own check-in
		return err
	}
	return db.Where("cluster_id = ? AND rank = ?", clusterID, rank).Delete(&GPUMachine{}).Error
}

// minutePoints folds samples into one row per GPU per minute.
func minutePoints(clusterID string, rank int, samples []GPUSample) []GPUPoint {
	type key struct {
		gpu int
		at  int64
	}
	byKey := map[key]*GPUPoint{}
	var order []key
	for _, s := range samples {
		at := s.At.Unix()
		k := key{s.Index, at - at%60}
		p := byKey[k]
		if p != nil && p.N >= MaxSamplesPerGPUMinute {
			continue // X19: repeats beyond a minute's bound are ignored
		}
		if p == nil {
			p = &GPUPoint{ClusterID: clusterID, Rank: rank, GPU: s.Index, At: k.at}
			byKey[k] = p
			order = append(order, k)
		}
		p.Util = meanInt(p.Util, s.UtilPct, p.N)
		p.MemUsed = meanInt(p.MemUsed, s.MemUsedMiB, p.N)
		p.MemTotal = meanInt(p.MemTotal, s.MemTotalMiB, p.N)
		p.Temp = meanInt(p.Temp, s.TempC, p.N)
		p.Power = meanInt(p.Power, s.PowerW, p.N)
		p.SMClock = meanInt(p.SMClock, s.SMClockMHz, p.N)
		if s.ECCUncorrected != nil && (p.ECC == nil || *s.ECCUncorrected > *p.ECC) {
			p.ECC = s.ECCUncorrected
		}
		if s.Throttle != nil {
			t := *s.Throttle
			if p.Throttle != nil {
				t |= *p.Throttle
			}
			p.Throttle = &t
		}
		p.N++
	}
	out := make([]GPUPoint, len(order))
	for i, k := range order {
		out[i] = *byKey[k]
	}
	return out
}

// meanInt adds v to a running mean of n values (unknowns are skipped).
func meanInt(mean, v *int, n int) *int {
	switch {
	case v == nil:
		return mean
	case mean == nil:
		x := *v
		return &x
	}
	x := (*mean*n + *v + (n+1)/2) / (n + 1)
	return &x
}

// mergeAssignments averages a stored minute point with the new one,
// weighted by their sample counts; unknowns keep the known side.
func mergeAssignments() map[string]any {
	set := map[string]any{"n": gorm.Expr("gpu_points.n + excluded.n")}
	for _, col := range []string{"util", "mem_used", "mem_total", "temp", "power", "sm_clock"} {
		set[col] = gorm.Expr(fmt.Sprintf("CASE WHEN excluded.%[1]s IS NULL THEN gpu_points.%[1]s WHEN gpu_points.%[1]s IS NULL THEN excluded.%[1]s "+
			"ELSE (gpu_points.%[1]s * gpu_points.n + excluded.%[1]s * excluded.n) / (gpu_points.n + excluded.n) END", col))
	}
	set["ecc"] = gorm.Expr("CASE WHEN excluded.ecc IS NULL OR gpu_points.ecc > excluded.ecc THEN gpu_points.ecc ELSE excluded.ecc END")
	set["throttle"] = gorm.Expr("CASE WHEN excluded.throttle IS NULL THEN gpu_points.throttle WHEN gpu_points.throttle IS NULL THEN excluded.throttle " +
		"ELSE gpu_points.throttle | excluded.throttle END")
	return set
}

// apply folds a report into the machine's state and returns the hardware
// fault it reveals, "" when none.
func (m *GPUMachine) apply(r GPUReport) string {
	known, ecc, xids := m.GPUs.V, m.ECC.V, m.XIDs.V
	if ecc == nil {
		ecc = map[string]int64{}
	}
	var faults []string

	for _, x := range r.XIDs {
		xids = append(xids, XIDLine{At: x.At.UTC(), Code: x.Code, Text: truncate(x.Text, MaxXIDLineLen)})
		if why, fatal := domain.FatalXID(x.Code); fatal {
			faults = append(faults, fmt.Sprintf("XID %d (%s): %s", x.Code, why, strings.TrimSpace(truncate(x.Text, 300))))
		}
	}
	if n := len(xids) - keptXIDLines; n > 0 {
		xids = xids[n:]
	}

	if len(r.Samples) > 0 {
		// The newest sample of each GPU is the machine as it is now.
		latest := map[int]GPUSample{}
		for _, s := range r.Samples {
			if l, ok := latest[s.Index]; !ok || !s.At.Before(l.At) {
				latest[s.Index] = s
			}
		}
		seen := map[string]bool{}
		now := make([]knownGPU, 0, len(latest))
		for _, s := range latest {
			now = append(now, knownGPU{Index: s.Index, UUID: s.UUID})
			seen[gpuKey(s.Index, s.UUID)] = true
			if s.ECCUncorrected == nil {
				continue
			}
			k := gpuKey(s.Index, s.UUID)
			if before, ok := ecc[k]; ok && *s.ECCUncorrected > before {
				faults = append(faults, fmt.Sprintf("GPU %d: %d new uncorrectable ECC errors (%d in all)",
					s.Index, *s.ECCUncorrected-before, *s.ECCUncorrected))
			} else if !ok && *s.ECCUncorrected > 0 {
				faults = append(faults, fmt.Sprintf("GPU %d: %d uncorrectable ECC errors", s.Index, *s.ECCUncorrected))
			}
			ecc[k] = *s.ECCUncorrected // a counter that went down: the driver reloaded, a new baseline
		}
		for _, g := range known {
			if !seen[gpuKey(g.Index, g.UUID)] {
				what := fmt.Sprintf("GPU %d", g.Index)
				if g.UUID != "" {
					what += " (" + g.UUID + ")"
				}
				faults = append(faults, what+" vanished from nvidia-smi")
			}
		}
		slices.SortFunc(now, func(a, b knownGPU) int { return a.Index - b.Index })
		// A vanished GPU stays known, so every later report still misses
		// it; the machine's restart or replacement clears the fault.
		for _, g := range known {
			if !seen[gpuKey(g.Index, g.UUID)] {
				now = append(now, g)
			}
		}
		known = now
	}
	m.GPUs, m.ECC, m.XIDs = JSONOf(known), JSONOf(ecc), JSONOf(xids)
	slices.Sort(faults)
	return strings.Join(slices.Compact(faults), "; ")
}

func gpuKey(index int, uuid string) string {
	if uuid != "" {
		return uuid
	}
	return fmt.Sprintf("#%d", index)
}

// ---- reading ----

// GPUWindow is how far back a series reaches: 1h and 24h come from the
// minute points (24h in 10-minute steps), 30d from the hourly points.
type GPUWindow string

// The windows a series can cover.
const (
	GPUWindowHour  GPUWindow = "1h"
	GPUWindowDay   GPUWindow = "24h"
	GPUWindowMonth GPUWindow = "30d"
)

// ParseGPUWindow reads "1h", "24h" or "30d" ("" = 1h).
func ParseGPUWindow(s string) (GPUWindow, error) {
	switch w := GPUWindow(s); w {
	case "":
		return GPUWindowHour, nil
	case GPUWindowHour, GPUWindowDay, GPUWindowMonth:
		return w, nil
	}
	return "", fmt.Errorf("window %q: choose 1h, 24h or 30d", s)
}

// Span is how far back the window reaches; Step the distance between its points.
func (w GPUWindow) Span() time.Duration {
	switch w {
	case GPUWindowDay:
		return 24 * time.Hour
	case GPUWindowMonth:
		return 30 * 24 * time.Hour
	}
	return time.Hour
}

// start is the window's first second before now, on a step boundary, and
// its step in seconds.
func (w GPUWindow) start(now time.Time) (from, step int64) {
	step = int64(w.Step() / time.Second)
	from = now.Unix() - int64(w.Span()/time.Second)
	return from - from%step, step
}

// Step is the distance between the window's points.
func (w GPUWindow) Step() time.Duration {
	switch w {
	case GPUWindowDay:
		return 10 * time.Minute
	case GPUWindowMonth:
		return time.Hour
	}
	return time.Minute
}

// GPUValue is one GPU's values at At (the start of a step). Nil = unknown.
type GPUValue struct {
	At             time.Time `json:"at"`
	UtilPct        *int      `json:"utilizationPct"`
	MemUsedMiB     *int      `json:"memoryUsedMiB"`
	MemTotalMiB    *int      `json:"memoryTotalMiB"`
	TempC          *int      `json:"temperatureC"`
	PowerW         *int      `json:"powerW"`
	SMClockMHz     *int      `json:"smClockMHz"`
	ECCUncorrected *int64    `json:"eccUncorrected"`
	Throttle       *int64    `json:"throttleReasons"`
}

// GPUSeriesGPU is one GPU's series.
type GPUSeriesGPU struct {
	Index  int        `json:"index"`
	UUID   string     `json:"uuid"`
	Now    *GPUValue  `json:"now"` // its newest minute point within GPUNowWithin; nil = none
	Points []GPUValue `json:"points"`
}

// GPUNodeSeries is one machine's GPUs and what it reported about them.
type GPUNodeSeries struct {
	Rank    int            `json:"rank"`
	Name    string         `json:"name"`
	NoSMI   string         `json:"noNvidiaSmi,omitempty"` // why it reports no GPUs
	Fault   string         `json:"fault,omitempty"`       // the hardware fault that made it unwell (R1)
	FaultAt *time.Time     `json:"faultAt,omitempty"`
	XIDs    []XIDLine      `json:"xids"` // its recent XID lines, newest last
	LastAt  *time.Time     `json:"lastReportAt"`
	GPUs    []GPUSeriesGPU `json:"gpus"`
}

// GPUSeries is a cluster's GPU series over a window.
type GPUSeries struct {
	ClusterID string          `json:"cluster"`
	Window    GPUWindow       `json:"window"`
	Step      time.Duration   `json:"-"`
	From      time.Time       `json:"from"`
	To        time.Time       `json:"to"`
	Nodes     []GPUNodeSeries `json:"nodes"`
}

// GPUNowWithin is how recent a minute point must be to count as "now".
const GPUNowWithin = 3 * time.Minute

// GPUSeriesFor returns a cluster's series over w, through its
// organisation (A3): per machine (every node of the cluster, by rank) per
// GPU, oldest point first, and each GPU's "now" values. ErrNotFound for a
// cluster of another organisation.
func (s *Store) GPUSeriesFor(ctx context.Context, orgID, clusterID string, w GPUWindow) (GPUSeries, error) {
	if _, err := s.ClusterForOrg(ctx, orgID, clusterID); err != nil {
		return GPUSeries{}, err
	}
	return s.GPUSeriesByID(ctx, clusterID, w)
}

// GPUSeriesByID is GPUSeriesFor for jobs (no organisation scope).
func (s *Store) GPUSeriesByID(ctx context.Context, clusterID string, w GPUWindow) (GPUSeries, error) {
	if _, err := ParseGPUWindow(string(w)); err != nil {
		return GPUSeries{}, err
	}
	now := s.Now()
	from, step := w.start(now)
	out := GPUSeries{ClusterID: clusterID, Window: w, Step: w.Step(), From: time.Unix(from, 0).UTC(), To: now}
	db := s.db.WithContext(ctx)
	// X19: the answer names only each machine's real GPUs (fixed when it
	// registered), so it is bounded by window × machines × GPUs.
	c, err := s.ClusterByID(ctx, clusterID)
	if err != nil {
		return out, err
	}
	gpusByRank, err := s.MachineGPUs(ctx, c)
	if err != nil {
		return out, err
	}
	anyGPU := offerGPUs(c)
	for _, idx := range gpusByRank {
		anyGPU = append(anyGPU, idx...)
	}
	slices.Sort(anyGPU)
	anyGPU = slices.Compact(anyGPU)
	isReal := func(rank, gpu int) bool { return slices.Contains(gpusOf(gpusByRank, c, rank), gpu) }

	var points []GPUPoint
	switch w {
	case GPUWindowMonth:
		var hours []GPUHour
		err = db.Where("cluster_id = ? AND at >= ? AND gpu IN ?", clusterID, from, anyGPU).Order("rank, gpu, at").Find(&hours).Error
		points = make([]GPUPoint, len(hours))
		for i, h := range hours {
			points[i] = GPUPoint(h)
		}
	case GPUWindowDay:
		err = db.Raw("SELECT * FROM ("+gpuBucketsSQL(step)+") b WHERE gpu IN ? ORDER BY rank, gpu, at", clusterID, from, anyGPU).Scan(&points).Error
	default:
		err = db.Where("cluster_id = ? AND at >= ? AND gpu IN ?", clusterID, from, anyGPU).Order("rank, gpu, at").Find(&points).Error
	}
	if err != nil {
		return out, err
	}
	var latest []GPUPoint
	if err := db.Where("cluster_id = ? AND at >= ? AND gpu IN ?", clusterID, now.Add(-GPUNowWithin).Unix()-60, anyGPU).
		Order("rank, gpu, at").Find(&latest).Error; err != nil {
		return out, err
	}
	nodes, err := s.NodesFor(ctx, clusterID)
	if err != nil {
		return out, err
	}
	var machines []GPUMachine
	if err := db.Where("cluster_id = ?", clusterID).Find(&machines).Error; err != nil {
		return out, err
	}
	byRank := map[int]*GPUNodeSeries{}
	for _, n := range nodes {
		ns := GPUNodeSeries{Rank: n.Rank, Name: n.Name, Fault: n.HWFault, FaultAt: n.HWFaultAt, XIDs: []XIDLine{}, GPUs: []GPUSeriesGPU{}}
		out.Nodes = append(out.Nodes, ns)
	}
	slices.SortFunc(out.Nodes, func(a, b GPUNodeSeries) int { return a.Rank - b.Rank })
	for i := range out.Nodes {
		byRank[out.Nodes[i].Rank] = &out.Nodes[i]
	}
	gpuOf := func(ns *GPUNodeSeries, index int) *GPUSeriesGPU {
		for i := range ns.GPUs {
			if ns.GPUs[i].Index == index {
				return &ns.GPUs[i]
			}
		}
		ns.GPUs = append(ns.GPUs, GPUSeriesGPU{Index: index, Points: []GPUValue{}})
		return &ns.GPUs[len(ns.GPUs)-1]
	}
	for _, m := range machines {
		ns := byRank[m.Rank]
		if ns == nil {
			continue
		}
		ns.NoSMI, ns.LastAt = m.NoSMI, m.LastAt
		if m.XIDs.V != nil {
			ns.XIDs = m.XIDs.V
		}
		for _, k := range m.GPUs.V {
			if isReal(m.Rank, k.Index) {
				gpuOf(ns, k.Index).UUID = k.UUID
			}
		}
	}
	for _, p := range points {
		if ns := byRank[p.Rank]; ns != nil && isReal(p.Rank, p.GPU) {
			g := gpuOf(ns, p.GPU)
			g.Points = append(g.Points, p.value())
		}
	}
	// "Now" is the machine's present state only while it runs: a stopped,
	// down or released machine's last sample is history, not now.
	running := map[int]bool{}
	for _, n := range nodes {
		running[n.Rank] = c.Status != StatusStopped && !c.Status.Terminal() && n.Status.GPUsRunning()
	}
	for _, p := range latest {
		if ns := byRank[p.Rank]; ns != nil && isReal(p.Rank, p.GPU) && running[p.Rank] {
			v := p.value()
			gpuOf(ns, p.GPU).Now = &v // ordered by at: the last one wins
		}
	}
	for i := range out.Nodes {
		slices.SortFunc(out.Nodes[i].GPUs, func(a, b GPUSeriesGPU) int { return a.Index - b.Index })
	}
	return out, nil
}

// gpuBucketsSQL averages a cluster's minute points into step-second
// buckets per GPU (arguments: the cluster, the first second).
func gpuBucketsSQL(step int64) string {
	avg := func(col string) string { return "CAST(ROUND(AVG(" + col + ")) AS integer) AS " + col }
	bucket := fmt.Sprintf("(at - at %% %d)", step) // a literal: PostgreSQL matches GROUP BY to the SELECT by text
	return "SELECT rank, gpu, " + bucket + " AS at, SUM(n) AS n, " + avg("util") + ", " + avg("mem_used") + ", " + avg("mem_total") +
		", MAX(temp) AS temp, " + avg("power") + ", " + avg("sm_clock") + ", MAX(ecc) AS ecc, " + bitOr("throttle") + " AS throttle" +
		" FROM gpu_points WHERE cluster_id = ? AND at >= ? GROUP BY rank, gpu, " + bucket
}

func (p GPUPoint) value() GPUValue {
	return GPUValue{At: time.Unix(p.At, 0).UTC(), UtilPct: p.Util, MemUsedMiB: p.MemUsed, MemTotalMiB: p.MemTotal,
		TempC: p.Temp, PowerW: p.Power, SMClockMHz: p.SMClock, ECCUncorrected: p.ECC, Throttle: p.Throttle}
}

// ---- rollup and pruning ----

// throttleBits is how many bits of clocks_throttle_reasons.active the
// aggregates keep (NVIDIA defines 0x1 … 0x100 today).
const throttleBits = 12

// bitOr is the bitwise OR of a column over a group, in SQL both databases
// run (SQLite has no BIT_OR): the OR of each bit's MAX.
func bitOr(col string) string {
	parts := make([]string, throttleBits)
	for i := range parts {
		parts[i] = fmt.Sprintf("MAX(%s & %d)", col, 1<<i)
	}
	return "(" + strings.Join(parts, " | ") + ")"
}

// RollupGPUHours computes the hourly points of the complete hours in the
// three hours before upTo (truncated to the hour) from the minute points,
// replacing what an earlier run computed (late heartbeats are counted;
// runs are idempotent). It returns the rows written.
func (s *Store) RollupGPUHours(ctx context.Context, upTo time.Time) (int64, error) {
	to := upTo.Unix() - upTo.Unix()%3600
	from := to - 3*3600
	avg := func(col string) string { return "CAST(ROUND(AVG(" + col + ")) AS integer)" }
	q := "INSERT INTO gpu_hours (cluster_id, rank, gpu, at, n, util, mem_used, mem_total, temp, power, sm_clock, ecc, throttle) " +
		"SELECT cluster_id, rank, gpu, (at - at % 3600), SUM(n), " + avg("util") + ", " + avg("mem_used") + ", " + avg("mem_total") +
		", MAX(temp), " + avg("power") + ", " + avg("sm_clock") + ", MAX(ecc), " + bitOr("throttle") +
		" FROM gpu_points WHERE at >= ? AND at < ? GROUP BY cluster_id, rank, gpu, (at - at % 3600)" +
		" ON CONFLICT (cluster_id, rank, gpu, at) DO UPDATE SET n = excluded.n, util = excluded.util, mem_used = excluded.mem_used," +
		" mem_total = excluded.mem_total, temp = excluded.temp, power = excluded.power, sm_clock = excluded.sm_clock," +
		" ecc = excluded.ecc, throttle = excluded.throttle"
	res := s.db.WithContext(ctx).Exec(q, from, to)
	return res.RowsAffected, res.Error
}

// PruneGPUPoints forgets minute points older than GPUPointsKeep, hourly
// points older than GPUHoursKeep and the state of machines that reported
// nothing for GPUHoursKeep (their clusters ended). It returns the rows
// removed.
func (s *Store) PruneGPUPoints(ctx context.Context) (int64, error) {
	now := s.Now()
	db := s.db.WithContext(ctx)
	var n int64
	res := db.Where("at < ?", now.Add(-GPUPointsKeep).Unix()).Delete(&GPUPoint{})
	if res.Error != nil {
		return n, res.Error
	}
	n += res.RowsAffected
	if res = db.Where("at < ?", now.Add(-GPUHoursKeep).Unix()).Delete(&GPUHour{}); res.Error != nil {
		return n, res.Error
	}
	n += res.RowsAffected
	res = db.Where("last_at < ?", now.Add(-GPUHoursKeep)).Delete(&GPUMachine{})
	return n + res.RowsAffected, res.Error
}

// ClusterUtil is the whole cluster's utilization per step: the mean of
// every GPU's known utilization at that step, oldest first (UtilPct
// only; steps where no GPU reported are absent).
func (s GPUSeries) ClusterUtil() []GPUValue {
	sum, count := map[int64]int{}, map[int64]int{}
	for _, n := range s.Nodes {
		for _, g := range n.GPUs {
			for _, p := range g.Points {
				if p.UtilPct != nil {
					sum[p.At.Unix()] += *p.UtilPct
					count[p.At.Unix()]++
				}
			}
		}
	}
	ats := make([]int64, 0, len(sum))
	for at := range sum {
		ats = append(ats, at)
	}
	slices.Sort(ats)
	out := make([]GPUValue, len(ats))
	for i, at := range ats {
		u := (sum[at] + count[at]/2) / count[at]
		out[i] = GPUValue{At: time.Unix(at, 0).UTC(), UtilPct: &u}
	}
	return out
}

// ---- the operator's view (OP3) ----

// ClusterGPUUsage is one cluster's GPUs now: their newest minute points
// within GPUNowWithin.
type ClusterGPUUsage struct {
	ClusterID   string  `gorm:"column:cluster_id"`
	GPUs        int     `gorm:"column:gpus"`     // GPUs that reported
	UtilPct     float64 `gorm:"column:util_pct"` // their mean utilization (GPUs of unknown utilization left out)
	MemUsedMiB  int64   `gorm:"column:mem_used"`
	MemTotalMiB int64   `gorm:"column:mem_total"`
}

// GPUUsageByCluster is every cluster whose GPUs reported within
// GPUNowWithin, by id: a cluster that ended or stopped drops out within
// minutes, so the set stays the clusters running now.
func (s *Store) GPUUsageByCluster(ctx context.Context) ([]ClusterGPUUsage, error) {
	var out []ClusterGPUUsage
	err := s.db.WithContext(ctx).Raw(`SELECT cluster_id, COUNT(*) AS gpus, COALESCE(AVG(util), 0) AS util_pct,
		COALESCE(SUM(mem_used), 0) AS mem_used, COALESCE(SUM(mem_total), 0) AS mem_total
		FROM gpu_points p WHERE at >= ? AND at = (SELECT MAX(at) FROM gpu_points q
			WHERE q.cluster_id = p.cluster_id AND q.rank = p.rank AND q.gpu = p.gpu)
		GROUP BY cluster_id ORDER BY cluster_id`, s.Now().Add(-GPUNowWithin).Unix()-60).Scan(&out).Error
	return out, err
}

// FleetGPUUsage sums usages into the fleet's: GPUs reporting, clusters,
// and their mean utilization (weighted by GPUs).
func FleetGPUUsage(us []ClusterGPUUsage) (gpus, clusters int, utilPct float64) {
	var sum float64
	for _, u := range us {
		gpus += u.GPUs
		sum += u.UtilPct * float64(u.GPUs)
	}
	if gpus > 0 {
		utilPct = sum / float64(gpus)
	}
	return gpus, len(us), utilPct
}

// GPUsRunning is NodeStatus.GPUsRunning (domain): whether a node in status
// st has GPUs at work now.
func GPUsRunning(st NodeStatus) bool { return st.GPUsRunning() }
