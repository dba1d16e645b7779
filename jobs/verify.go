package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/domain"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// Verify drives every verifying cluster to ready or degraded, and every
// "run verification again" on a ready one to its report (X13; see
// models/verify.go). Each tick it reads every check the agents answered,
// rebuilds the report, writes an event for each verdict that changed
// (with its node), plans the checks that are due — every machine's check,
// then node-0's ring all-reduce, then the pairs in waves — and decides:
// a machine that fails is swapped while MaySwapNow allows; swaps spent,
// the fabric slow as a whole, or the window over → degraded with the
// report. Agents take the checks through their heartbeat.
type Verify struct {
	Store *models.Store
	Mail  *models.ClusterNotify // the ready or degraded mail, with the report's summary; nil = none
}

// Name implements Job.
func (j *Verify) Name() string { return "verify" }

// Run implements Job. One cluster's trouble does not stop the others.
func (j *Verify) Run(ctx context.Context) error {
	clusters, err := j.Store.ClustersVerifying(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range clusters {
		if err := j.advance(ctx, c); err != nil && !errors.Is(err, models.ErrConflict) {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// verification is one tick's reading of a cluster's run.
type verification struct {
	c      models.Cluster
	run    models.VerifyRun
	nodes  []models.ClusterNode // not joining: the machines checked this round
	all    []models.ClusterNode
	spec   nodespec.Cluster
	tasks  []models.VerifyTask
	th     models.VerifyThresholds
	prev   models.VerifyReport
	rep    models.VerifyReport
	events []models.VerifyEvent
	todo   []models.NewVerifyTask
}

func (j *Verify) advance(ctx context.Context, c models.Cluster) error {
	v, err := j.load(ctx, c)
	if err != nil || v == nil {
		return err
	}
	return j.decide(ctx, v)
}

// load reads cluster c's running verification; nil when none runs.
func (j *Verify) load(ctx context.Context, c models.Cluster) (*verification, error) {
	run, err := j.Store.VerifyRunFor(ctx, c)
	if err != nil || run.Status != models.VerifyRunning {
		return nil, err
	}
	all, err := j.Store.NodesFor(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	offer, err := j.Store.OfferByID(ctx, c.OfferID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return nil, err
	}
	tasks, err := j.Store.VerifyTasks(ctx, c.ID, run.Run)
	if err != nil {
		return nil, err
	}
	v := &verification{c: c, run: run, all: all, tasks: tasks, th: j.Store.Settings().Verify, prev: run.ReportOf()}
	for _, n := range all {
		if n.JoinKind == "" {
			v.nodes = append(v.nodes, n)
		}
	}
	v.spec = models.ClusterSpec(c, v.nodes, offer)
	v.rep = models.VerifyReport{Run: run.Run, Rerun: run.Rerun, Status: models.VerifyRunning, StartedAt: run.StartedAt,
		MaxSwaps: run.MaxSwaps, Swaps: v.prev.Swaps, Pairs: []models.PairVerdict{},
		Thresholds: models.ReportThresholds{RingPercent: v.th.RingPercent, PairBelowMedianPercent: v.th.PairBelowMedianPercent, IdleTempMaxC: v.th.IdleTempMaxC}}
	if v.rep.Swaps == nil {
		v.rep.Swaps = []models.SwapRecord{}
	}
	v.swapOutcomes()
	return v, nil
}

// decide reads the checks in order and acts on the first thing due.
func (j *Verify) decide(ctx context.Context, v *verification) error {
	now := j.Store.Now()
	machinesDone, failed := v.machines()
	joining := len(v.nodes) < len(v.all)
	late := !now.Before(v.run.Deadline)
	switch {
	case joining && late:
		return j.finish(ctx, v, "timeout", "", v.summary("The verification window ended while a swapped machine was still joining."))
	case joining:
		return j.save(ctx, v) // the join job brings the replacement in
	case len(failed) > 0 && !v.run.Rerun:
		why := v.machineFailure(failed[0])
		return j.swapOrFail(ctx, v, failed[0].Rank, why)
	case !machinesDone:
		if late {
			return j.finish(ctx, v, "timeout", "", v.summary("The verification window ended before every machine answered its check."))
		}
		return j.plan(ctx, v)
	}
	ringDone := v.ring()
	pairsDone := ringDone && v.pairs()
	if !pairsDone {
		if late {
			return j.finish(ctx, v, "timeout", "", v.summary("The verification window ended before the fabric checks answered."))
		}
		return j.plan(ctx, v)
	}
	culprit := v.slowPairCulprit()
	ringOK := v.rep.Ring != nil && v.rep.Ring.Status == domain.VerdictPassed
	switch {
	case culprit >= 0 && !v.run.Rerun:
		return j.swapOrFail(ctx, v, culprit, fmt.Sprintf("the link of node-%d is slow: %s", culprit, v.slowPairs(culprit)))
	case len(failed) > 0: // a run again reports, never swaps
		return j.finish(ctx, v, "node-"+strconv.Itoa(failed[0].Rank), failed[0].Node, v.summary(v.machineFailure(failed[0])))
	case culprit >= 0:
		return j.finish(ctx, v, "node-"+strconv.Itoa(culprit), fmt.Sprintf("node-%d", culprit),
			v.summary(fmt.Sprintf("The link of node-%d is slow.", culprit)))
	case !ringOK:
		return j.finish(ctx, v, "fabric", "", v.summary("The fabric as a whole is slow (the network, not one machine): no machine was swapped."))
	}
	return j.finish(ctx, v, "", "", v.summary(""))
}

// swapOrFail swaps machine rank when MaySwapNow allows it, else ends the
// verification failed, naming the node.
func (j *Verify) swapOrFail(ctx context.Context, v *verification, rank int, why string) error {
	node := fmt.Sprintf("node-%d", rank)
	machine := ""
	for _, n := range v.nodes {
		if n.Rank == rank {
			machine = n.ProviderNodeID
		}
	}
	ok, whyNot := v.c.MaySwapNow(v.run, v.all, j.Store.Now())
	if ok {
		// Health damping (X14): with too many machines failing
		// at once, the network or the provider is at fault, not the
		// machines, and no swap is made.
		var failing []string
		for _, m := range v.rep.Machines {
			if m.Status == domain.VerdictFailed {
				failing = append(failing, m.Node)
			}
		}
		verdict, err := j.Store.MayRepairAutomatically(ctx, v.c, append(failing, node)...)
		if err != nil {
			return err
		}
		ok, whyNot = verdict.Allowed, verdict.Reason
	}
	if !ok {
		return j.finish(ctx, v, node, node, v.summary(fmt.Sprintf("%s failed verification (%s) and is not swapped: %s.", node, why, whyNot)))
	}
	v.rep.Swaps = append(v.rep.Swaps, models.SwapRecord{Node: node, MachineID: machine, Reason: why, At: j.Store.Now(), Outcome: "joining"})
	v.rep.Summary = fmt.Sprintf("Swapping %s: %s.", node, why)
	err := j.Store.SwapForVerification(ctx, v.c, v.run, rank, v.rep, v.events)
	return err
}

// finish ends the run; what is "" when everything passed.
func (j *Verify) finish(ctx context.Context, v *verification, what, node, msg string) error {
	v.rep.Summary = msg
	_, err := j.Store.FinishVerification(ctx, v.c, v.run, v.rep, what, node, msg, v.events, j.Mail)
	return err
}

// plan adds the checks due and keeps the report.
func (j *Verify) plan(ctx context.Context, v *verification) error {
	if len(v.todo) > 0 {
		if err := j.Store.AddVerifyTasks(ctx, v.c, v.run, v.todo); err != nil {
			return err
		}
	}
	return j.save(ctx, v)
}

func (j *Verify) save(ctx context.Context, v *verification) error {
	v.rep.Summary = v.progress()
	return j.Store.SaveVerifyReport(ctx, v.c, v.run, v.rep, v.events)
}

// swapOutcomes marks swaps whose machine has joined (or failed to).
func (v *verification) swapOutcomes() {
	for i := range v.rep.Swaps {
		s := &v.rep.Swaps[i]
		if s.Outcome != "joining" {
			continue
		}
		for _, n := range v.all {
			if n.Name != s.Node {
				continue
			}
			switch {
			case n.JoinKind != "":
			case n.Status.Down():
				s.Outcome = "failed"
				v.events = append(v.events, models.VerifyEvent{Kind: "error", Node: n.Name,
					Message: fmt.Sprintf("The replacement for %s could not join: %s", n.Name, n.Message)})
			default:
				s.Outcome, s.NewMachine = "joined", n.ProviderNodeID
				s.JoinedAt = joinedAt(n)
			}
		}
	}
}

// joinedAt is when a replacement joined: its software's hand-over, else
// its mesh (the join ends with one of them); nil when neither is known.
func joinedAt(n models.ClusterNode) *time.Time {
	for _, t := range []*time.Time{n.SoftwareAt, n.MeshAt} {
		if t != nil {
			at := t.UTC()
			return &at
		}
	}
	return nil
}

// machines judges every machine's check, planning those not asked yet;
// it reports whether all answered and which failed (by rank).
func (v *verification) machines() (bool, []models.MachineVerdict) {
	done := true
	var failed []models.MachineVerdict
	for _, n := range v.all {
		mv := models.MachineVerdict{Node: n.Name, Rank: n.Rank, MachineID: n.ProviderNodeID, Status: domain.VerdictPending, Errors: []string{}}
		if n.JoinKind != "" {
			mv.Status, mv.GPUs = domain.VerdictSwapping, "a replacement machine is joining"
			v.rep.Machines = append(v.rep.Machines, mv)
			continue
		}
		t := v.machineTask(n)
		switch {
		case t == nil:
			v.todo = append(v.todo, models.NewVerifyTask{Check: models.CheckMachine, Rank: n.Rank, Peer: -1,
				MachineID: n.ProviderNodeID, Script: nodespec.VerifyMachineScript})
			done = false
		case !t.Finished():
			done = false
		default:
			mv = v.judgeMachine(n, *t)
			if mv.Status == domain.VerdictFailed {
				failed = append(failed, mv)
			}
		}
		v.rep.Machines = append(v.rep.Machines, mv)
		v.noteMachine(mv)
	}
	return done, failed
}

// machineTask is node n's latest machine check for the machine it is now.
func (v *verification) machineTask(n models.ClusterNode) *models.VerifyTask {
	var out *models.VerifyTask
	for i, t := range v.tasks {
		if t.Check == models.CheckMachine && t.Rank == n.Rank && t.MachineID == n.ProviderNodeID {
			out = &v.tasks[i]
		}
	}
	return out
}

// noteMachine writes an event when a machine's verdict is new.
func (v *verification) noteMachine(mv models.MachineVerdict) {
	if mv.Status != domain.VerdictPassed && mv.Status != domain.VerdictFailed {
		return
	}
	for _, p := range v.prev.Machines {
		if p.Node == mv.Node && p.Status == mv.Status && p.MachineID == mv.MachineID {
			return
		}
	}
	if mv.Status == domain.VerdictPassed {
		v.events = append(v.events, models.VerifyEvent{Kind: "step", Node: mv.Node,
			Message: fmt.Sprintf("%s passed the machine check: %s; %s.", mv.Node, mv.GPUs, stressLine(mv))})
		return
	}
	v.events = append(v.events, models.VerifyEvent{Kind: "error", Type: models.TypeNodeVerificationFailed, Node: mv.Node,
		Message: fmt.Sprintf("%s (machine %s) failed the machine check: %s.", mv.Node, orUnknown(mv.MachineID), strings.Join(mv.Errors, "; "))})
}

func orUnknown(s string) string {
	if s == "" {
		return "id not given by the provider"
	}
	return s
}

func stressLine(mv models.MachineVerdict) string {
	switch {
	case mv.Stress == nodespec.StressSkipped:
		return "stress skipped: " + mv.StressDetail
	case mv.StressPassed:
		return mv.Stress + " passed"
	}
	return mv.Stress + " failed: " + mv.StressDetail
}

// judgeMachine reads one machine check against the offer and thresholds
// (X13): domain.JudgeMachine.
func (v *verification) judgeMachine(n models.ClusterNode, t models.VerifyTask) models.MachineVerdict {
	return domain.JudgeMachine(domain.MachineCheck{Node: n.Name, Rank: n.Rank, MachineID: n.ProviderNodeID,
		Failed: t.Status == models.TaskFailed, Output: t.Output, Brief: brief(t.Output)},
		v.c.GPUsPerNode, v.c.Accelerator, v.th)
}

func (v *verification) machineFailure(mv models.MachineVerdict) string {
	return fmt.Sprintf("%s failed the machine check: %s", mv.Node, strings.Join(mv.Errors, "; "))
}

// ring judges node-0's ring all-reduce of this round, planning it when due:
// by what the machines' NICs carry, at any machine count, or by the
// encrypted overlay's floor (nodespec.ReadRing; X13).
func (v *verification) ring() bool {
	judged := v.spec.JudgeRing(0, v.th.RingPercent)
	r := &models.RingVerdict{Status: domain.VerdictPending, ThresholdPercent: v.th.RingPercent, ExpectedBusBW: judged.ExpectedBusBW,
		LineRateGBps: judged.LineRateGBps, FloorBusBW: judged.FloorBusBW, Overlay: v.spec.Overlay()}
	v.rep.Ring = r
	t := v.roundTask(models.CheckRing, 0, -1)
	if t == nil {
		v.todo = append(v.todo, models.NewVerifyTask{Check: models.CheckRing, Rank: 0, Peer: -1, MachineID: v.nodes[0].ProviderNodeID,
			Env: map[string]string{"NCCL_ALGO": "Ring"}, Script: v.spec.VerifyRingCommand()})
		return false
	}
	if !t.Finished() {
		return false
	}
	reading, err := v.spec.ReadRing(t.Output, v.th.RingPercent)
	var what string
	switch {
	case t.Status == models.TaskFailed || err != nil:
		r.Status, r.Detail = domain.VerdictFailed, "the all-reduce did not complete"
		if err != nil {
			r.Detail += ": " + err.Error()
		}
		what = r.Detail
	default:
		r.BusBW, r.Percent = reading.BusBW, reading.Percent
		r.Status, what = domain.VerdictPassed, reading.Why
		if !reading.Passed {
			r.Status = domain.VerdictFailed
		}
	}
	if v.prev.Ring == nil || v.prev.Ring.Status != r.Status || v.prev.Ring.BusBW != r.BusBW {
		kind := "step"
		if r.Status == domain.VerdictFailed {
			kind = "error"
		}
		v.events = append(v.events, models.VerifyEvent{Kind: kind, Node: "node-0", Message: fmt.Sprintf(
			"Ring all-reduce (NCCL_ALGO=Ring) across %d machines: %s: %s.", len(v.nodes), what, r.Status)})
	}
	return true
}

func detail(s string) string {
	if s == "" {
		return ""
	}
	return " " + s + "."
}

// roundTask is this round's check of kind on rank (with peer).
func (v *verification) roundTask(check string, rank, peer int) *models.VerifyTask {
	for i, t := range v.tasks {
		if t.Round == v.run.Round && t.Check == check && t.Rank == rank && t.Peer == peer {
			return &v.tasks[i]
		}
	}
	return nil
}

// pairPlan is the pairwise check with three machines or more: the pairs
// (i, i+1 mod N) in waves that share no machine — even i, odd i, and the
// wrap-around pair of an odd N alone.
func pairPlan(n int) [][][2]int {
	if n < 3 {
		return nil
	}
	waves := make([][][2]int, 2, 3)
	for i := range n {
		p := [2]int{i, (i + 1) % n}
		switch {
		case n%2 == 1 && i == n-1:
			waves = append(waves, [][2]int{p})
		default:
			waves[i%2] = append(waves[i%2], p)
		}
	}
	return waves
}

// pairs judges the pairwise check wave by wave, planning the next wave
// when the one before answered.
func (v *verification) pairs() bool {
	waves := pairPlan(len(v.nodes))
	for _, wave := range waves {
		var due []models.NewVerifyTask
		waveDone := true
		for _, p := range wave {
			a, b := v.nodes[p[0]], v.nodes[p[1]]
			pv := models.PairVerdict{A: a.Name, B: b.Name, Status: domain.VerdictPending}
			t := v.roundTask(models.CheckPair, a.Rank, b.Rank)
			switch {
			case t == nil:
				due = append(due, models.NewVerifyTask{Check: models.CheckPair, Rank: a.Rank, Peer: b.Rank, MachineID: a.ProviderNodeID,
					Env:    map[string]string{"NCCL_ALGO": "Ring", "PEER_RANK": strconv.Itoa(b.Rank), "PEER_HOST": b.PrivateIP},
					Script: v.spec.VerifyPairCommand(a.PrivateIP, b.PrivateIP)})
				waveDone = false
			case !t.Finished():
				waveDone = false
			default:
				res, err := nodespec.ParseAllReduce(t.Output)
				if t.Status == models.TaskFailed || err != nil {
					pv.Status, pv.Detail = domain.VerdictFailed, "the pair's all-reduce did not complete"
				} else {
					row := res.Largest()
					pv.BusBW, pv.Status = max(row.OutOfPlace.BusBW, row.InPlace.BusBW), domain.VerdictMeasured
				}
			}
			v.rep.Pairs = append(v.rep.Pairs, pv)
		}
		if len(due) > 0 {
			v.todo = append(v.todo, due...)
			return false
		}
		if !waveDone {
			return false
		}
	}
	v.rep.MedianPair = judgePairs(v.rep.Pairs, v.spec.PairExpectedBusBW(), v.th)
	if len(waves) > 0 && !slices.EqualFunc(v.prev.Pairs, v.rep.Pairs, func(a, b models.PairVerdict) bool { return a == b }) {
		var slow []string
		for _, p := range v.rep.Pairs {
			if p.Status == domain.VerdictSlow || p.Status == domain.VerdictFailed {
				slow = append(slow, fmt.Sprintf("%s–%s %.1f GB/s", p.A, p.B, p.BusBW))
			}
		}
		msg := fmt.Sprintf("Pairwise all-reduce of %d pairs: median %.1f GB/s; no pair below %d %% of the %.1f GB/s a pair allows, none more than %d %% below the median.",
			len(v.rep.Pairs), v.rep.MedianPair, v.th.RingPercent, v.spec.PairExpectedBusBW(), v.th.PairBelowMedianPercent)
		kind := "step"
		if len(slow) > 0 {
			kind = "error"
			msg = fmt.Sprintf("Pairwise all-reduce of %d pairs: median %.1f GB/s; slow: %s.", len(v.rep.Pairs), v.rep.MedianPair, strings.Join(slow, ", "))
		}
		v.events = append(v.events, models.VerifyEvent{Kind: kind, Node: "node-0", Message: msg})
	}
	return true
}

// judgePairs is domain.JudgePairs at the thresholds th.
func judgePairs(pairs []models.PairVerdict, expected float64, th models.VerifyThresholds) float64 {
	return domain.JudgePairs(pairs, expected, th)
}

// pairCulprit is domain.PairCulprit at the thresholds th.
func pairCulprit(pairs []models.PairVerdict, names []string, median float64, th models.VerifyThresholds) (int, int) {
	return domain.PairCulprit(pairs, names, median, th)
}

// slowPairCulprit is pairCulprit of this round, with its event.
func (v *verification) slowPairCulprit() int {
	names := make([]string, len(v.nodes))
	ranks := make([]int, len(v.nodes))
	for i, n := range v.nodes {
		names[i], ranks[i] = n.Name, n.Rank
	}
	i, best := pairCulprit(v.rep.Pairs, names, v.rep.MedianPair, v.th)
	if i < 0 {
		return -1
	}
	rank := ranks[i]
	v.events = append(v.events, models.VerifyEvent{Kind: "error", Type: models.TypeNodeVerificationFailed, Node: fmt.Sprintf("node-%d", rank),
		Message: fmt.Sprintf("node-%d (machine %s) failed the pairwise check: its link is slow in %d pair(s).", rank, orUnknown(v.machineID(rank)), best)})
	return rank
}

// slowPairs names rank's slow pairs with their readings and why.
func (v *verification) slowPairs(rank int) string {
	name := fmt.Sprintf("node-%d", rank)
	var out []string
	for _, p := range v.rep.Pairs {
		if (p.A == name || p.B == name) && (p.Status == domain.VerdictSlow || p.Status == domain.VerdictFailed) {
			what := fmt.Sprintf("%s–%s %.1f GB/s", p.A, p.B, p.BusBW)
			if p.Detail != "" {
				what += " (" + p.Detail + ")"
			}
			out = append(out, what)
		}
	}
	return strings.Join(out, ", ")
}

func (v *verification) machineID(rank int) string {
	for _, n := range v.all {
		if n.Rank == rank {
			return n.ProviderNodeID
		}
	}
	return ""
}

// progress is the report's summary while it runs.
func (v *verification) progress() string {
	passed := 0
	for _, m := range v.rep.Machines {
		if m.Status == domain.VerdictPassed {
			passed++
		}
	}
	s := fmt.Sprintf("Verifying: %d of %d machines passed their check", passed, len(v.all))
	if r := v.rep.Ring; r != nil && r.Status != domain.VerdictPending {
		s += fmt.Sprintf("; ring %s GB/s (%d %%)", nodespec.GBps(r.BusBW), r.Percent)
	}
	if n := len(v.rep.Swaps); n > 0 {
		s += fmt.Sprintf("; %d of %d swaps used", n, v.rep.MaxSwaps)
	}
	return s + "."
}

// summary is the report's one-paragraph verdict: lead, then the figures.
func (v *verification) summary(lead string) string {
	var b strings.Builder
	if lead == "" {
		b.WriteString(fmt.Sprintf("Every machine (%d) passed its GPU, error and stress check", len(v.nodes)))
		if r := v.rep.Ring; r != nil {
			b.WriteString("; the ring all-reduce reached " + r.Measured())
		}
		if len(v.rep.Pairs) > 0 {
			b.WriteString(fmt.Sprintf("; %d pairs at least %d %% of what a pair allows and within %d %% of the median %.1f GB/s",
				len(v.rep.Pairs), v.th.RingPercent, v.th.PairBelowMedianPercent, v.rep.MedianPair))
		}
		b.WriteString(".")
	} else {
		b.WriteString(strings.TrimSpace(lead))
		if r := v.rep.Ring; r != nil && r.Status != domain.VerdictPending {
			b.WriteString(" Ring all-reduce: " + r.Measured() + ".")
		}
	}
	if n := len(v.rep.Swaps); n > 0 {
		var names []string
		for _, s := range v.rep.Swaps {
			names = append(names, s.Node)
		}
		b.WriteString(fmt.Sprintf(" Swapped before hand-over: %s (%d of %d allowed).", strings.Join(names, ", "), n, v.rep.MaxSwaps))
	}
	return b.String()
}
