package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/views"
)

// The cluster page's words for states, progress and errors (L4, L6, L8,
// L11, R2, R5): one vocabulary, derived from the cluster's status and each
// node's step, so the page never says two things at once.

// releasedNothingBilled ends every sentence about a cluster that failed to start (L4).
const releasedNothingBilled = "every machine was released and nothing was billed"

// stepDoing is what a node does while it waits for step.
func stepDoing(step string) string {
	switch step {
	case models.StepRunning:
		return "booting"
	case models.StepAgent:
		return "starting its cluster agent"
	case models.StepMesh:
		return "joining the private network"
	case models.StepSoftware:
		return "installing its software"
	case "reserved":
		return "being reserved"
	}
	return "starting"
}

// softwareLabel names the cluster's software for people ("Slurm").
func softwareLabel(name string) string {
	if sw := software.Lookup(name); sw != nil {
		return sw.Label
	}
	return name
}

// nodeNamed returns the node of status st, or "" when none is.
func nodeNamed(nodes []models.ClusterNode, st ...models.NodeStatus) string {
	for _, n := range nodes {
		for _, s := range st {
			if n.Status == s {
				return n.Name
			}
		}
	}
	return ""
}

// problemView says a cluster's lastError as a sentence, with what happens
// to billing and what the customer can do; the code stays in small print.
// nil when the cluster has no error to show.
func problemView(cl models.Cluster, nodes []models.ClusterNode) *views.ProblemView {
	if cl.LastError == "" || (cl.Status != models.StatusFailed && cl.Status != models.StatusDegraded) {
		return nil
	}
	code := cl.LastError
	kind, detail, _ := strings.Cut(code, ":")
	p := &views.ProblemView{Code: code, Tone: string(cl.Status)}
	who := func(fallback string) string {
		if n := nodeNamed(nodes, models.NodeFailed, models.NodeLost); n != "" {
			return n
		}
		return fallback
	}
	sw := softwareLabel(cl.Software)
	rate := models.USD(cl.USDPerHour) + "/h"
	switch {
	case cl.Status == models.StatusFailed:
		p.Advice = failedAdvice(0)
		switch kind {
		case "timeout":
			switch detail {
			case "reserved":
				p.Sentence = "The provider did not accept the reservation in time; " + releasedNothingBilled + "."
			case models.StepRunning:
				p.Sentence = who("A machine") + " did not finish booting in time; " + releasedNothingBilled + "."
			case models.StepAgent:
				p.Sentence = who("A machine") + " booted but its cluster agent never checked in; " + releasedNothingBilled + "."
			case models.StepMesh:
				p.Sentence = who("A machine") + " did not reach every other machine on the private network in time; " + releasedNothingBilled + "."
			default:
				p.Sentence = who("A machine") + " did not finish " + stepDoing(detail) + " in time; " + releasedNothingBilled + "."
			}
		case "node_lost":
			p.Sentence = who("A machine") + " vanished at the provider while " + stepDoing(detail) + "; " + releasedNothingBilled + "."
		case "gpu_mismatch":
			p.Sentence = detail + " does not have the GPUs the offer promises; " + releasedNothingBilled + "."
		case "provider_rejected":
			if detail == "no_capacity" {
				p.Sentence = fmt.Sprintf("The provider no longer had %d machines of this shape free in %s; %s.", cl.Nodes, cl.LocationName, releasedNothingBilled)
			} else {
				p.Sentence = "The provider refused the reservation (the offer changed or is no longer available); " + releasedNothingBilled + "."
			}
		default:
			p.Sentence = "The cluster did not come up whole; " + releasedNothingBilled + "."
		}
	case code == models.LastErrorRecoveryExhausted:
		p.Sentence = "Every recovery attempt is spent and a machine is still down."
		p.Advice = "Billing continues at " + rate + " for every machine. Terminate the cluster to stop it, or try Recover now."
	case strings.HasPrefix(code, models.LastErrorNodeDown):
		p.Sentence = "A machine stopped running: " + strings.TrimPrefix(code, models.LastErrorNodeDown) + "."
		p.Advice = "The other machines stay up and billing continues at " + rate + " for every machine. " +
			"Recovery can restart it (see Recovery below), or terminate the cluster to stop billing."
	case kind == "install_failed" && detail == "config":
		p.Sentence = sw + " cannot be set up for this cluster's configuration."
		p.Advice = "The machines stay up and billing continues at " + rate + ". Retry the install, or terminate the cluster to stop billing."
	case kind == "install_failed":
		p.Sentence = sw + " failed to install on " + detail + "; the node's log says why."
		p.Advice = "The machines stay up and billing continues at " + rate + ". Retry the install, or terminate the cluster to stop billing."
	case kind == "check_failed":
		p.Sentence = sw + " installed but did not pass its check in time."
		p.Advice = "The machines stay up and billing continues at " + rate + ". Retry the install, or terminate the cluster to stop billing."
	default:
		p.Sentence = "The cluster is degraded."
		p.Advice = "The machines stay up and billing continues at " + rate + ". Terminate the cluster to stop billing."
	}
	if cl.TerminateRequestedAt != nil {
		p.Advice = "Terminating: every machine is being released and billing has stopped."
	}
	return p
}

// phase is one provisioning step as the progress line says it.
type phase struct{ name, done string }

var phases = map[string]phase{
	models.StepRunning: {"Booting", "booted"},
	models.StepAgent:   {"Starting agents", "checked in"},
	models.StepMesh:    {"Joining the private network", "joined"},
}

// progressView is a starting cluster's progress line: the phase, how many
// machines finished it, how long it usually takes, the time elapsed, and
// as secondary text when the cluster gives up (L4, L11). nil once it is
// not starting.
func progressView(cl models.Cluster, nodes []models.ClusterNode, run *models.SoftwareRun, now time.Time) *views.ProgressView {
	if cl.TerminateRequestedAt != nil {
		return nil
	}
	machines := fmt.Sprintf("%d machines", cl.Nodes)
	switch cl.Status {
	case models.StatusProvisioning:
		if cl.PlacedAt == nil {
			return &views.ProgressView{Phase: "Reserving", Count: "0 of " + machines + " reserved",
				Usual: "usually under a minute", Elapsed: elapsed(now.Sub(cl.CreatedAt)),
				GivesUp: "gives up at " + cl.CreatedAt.Add(cl.Cap()).UTC().Format("15:04")}
		}
		step, done := currentStep(nodes)
		ph := phases[step]
		v := &views.ProgressView{Phase: ph.name, Count: fmt.Sprintf("%d of %d machines %s", done, cl.Nodes, ph.done),
			Elapsed: elapsed(now.Sub(cl.CreatedAt)), GivesUp: "gives up at " + cl.StepDeadline(step).UTC().Format("15:04")}
		switch step {
		case models.StepRunning:
			v.Usual = "usually about " + minutes(cl.BootTime()) + " for " + kindNoun(cl.MachineKind)
		default:
			v.Usual = "usually under a minute"
		}
		return v
	case models.StatusInstalling:
		v := &views.ProgressView{Phase: "Installing " + softwareLabel(cl.Software), Count: "on " + machines}
		start := now
		if cl.ReadyAt != nil {
			start = *cl.ReadyAt
		}
		if run != nil {
			start = run.StartedAt
			v.GivesUp = "gives up at " + run.Deadline.UTC().Format("15:04")
		} else {
			v.GivesUp = "gives up at " + start.Add(models.InstallWindow(cl.Software)).UTC().Format("15:04")
		}
		v.Elapsed = elapsed(now.Sub(start))
		return v
	}
	return nil
}

// currentStep is the earliest step a node still waits for and how many
// machines finished it.
func currentStep(nodes []models.ClusterNode) (string, int) {
	for _, step := range models.ProvisionSteps {
		done := 0
		for _, n := range nodes {
			if stepStamp(n, step) != nil {
				done++
			}
		}
		if done < len(nodes) {
			return step, done
		}
	}
	return models.StepMesh, len(nodes)
}

func stepStamp(n models.ClusterNode, step string) *time.Time {
	switch step {
	case models.StepRunning:
		return n.RunningAt
	case models.StepAgent:
		return n.AgentAt
	case models.StepMesh:
		return n.MeshAt
	}
	return n.SoftwareAt
}

// kindNoun is a machine kind in a sentence ("bare metal", "VMs").
func kindNoun(kind string) string {
	switch kind {
	case "vm":
		return "VMs"
	case "container":
		return "containers"
	case "bare_metal":
		return "bare metal"
	}
	return kind
}

// elapsed is m:ss, or h:mm:ss past an hour.
func elapsed(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d elapsed", h, m, s)
	}
	return fmt.Sprintf("%d:%02d elapsed", m, s)
}

// minutes is a typical duration in whole minutes ("12 min").
func minutes(d time.Duration) string {
	if d < time.Minute {
		return "a minute"
	}
	return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
}

// nodeDetail is the second line under a node's status: what it is doing
// while the cluster starts, or what the health pass saw.
func nodeDetail(cl models.Cluster, n models.ClusterNode, shown models.NodeStatus) string {
	switch shown {
	case models.NodeProvisioning:
		if n.Step == "done" {
			return "joined; waiting for the others"
		}
		if cl.PlacedAt == nil {
			return "being reserved"
		}
		return stepDoing(n.Step)
	case models.NodeFailed:
		return "failed while " + stepDoing(n.Step)
	case models.NodeReleased:
		return "released with the cluster"
	case models.NodeDegraded:
		return "software not in place"
	case models.NodeJoining:
		if n.JoinPlacedAt == nil {
			return "being reserved"
		}
		if n.MeshAt != nil {
			return "installing the software with the others"
		}
		return stepDoing(n.Step)
	}
	return ""
}

// ranFor is how long an ended cluster existed, launch to end: "2 min",
// "1 h 30 min", "3 d 4 h".
func ranFor(d time.Duration) string {
	d = max(d, 0).Round(time.Minute)
	days, h, m := int(d.Hours())/24, int(d.Hours())%24, int(d.Minutes())%60
	switch {
	case days > 0:
		return fmt.Sprintf("%d d %d h", days, h)
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m == 0:
		return "under a minute"
	}
	return fmt.Sprintf("%d min", m)
}

// failedAdvice is what to do about a failed cluster, given how many offers
// of its shape can start now (L4).
func failedAdvice(alternatives int) string {
	switch alternatives {
	case 0:
		return "Nothing is retried without you. No offer of this shape can start right now: request a quote, or try another shape on the offers page."
	case 1:
		return "Nothing is retried without you. One offer of the same shape can start now: see the Overview."
	}
	return fmt.Sprintf("Nothing is retried without you. %d offers of the same shape can start now: see the Overview.", alternatives)
}
