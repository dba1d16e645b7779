package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Balance enforcement defaults (B6): a running organisation whose balance
// is exhausted has its clusters stopped after DefaultBalanceGrace, and
// terminated after DefaultTerminateGrace more without a top-up.
const (
	DefaultBalanceGrace   = time.Hour
	DefaultTerminateGrace = 72 * time.Hour
)

func up0701BalanceEpisodes(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	return tx.Exec("CREATE TABLE balance_episodes (org_id varchar(32) PRIMARY KEY, started_at " + ts + " NOT NULL, " +
		"low_mailed_at " + ts + ", exhausted_at " + ts + ", stopped_at " + ts + ", terminated_at " + ts + ", " +
		"updated_at " + ts + " NOT NULL)").Error
}

// BalanceEpisode is one organisation's stretch of a balance that does not
// cover the next hour (B6, E1, X6): the warning mail, the moment the
// balance ran out, the stop after the grace and the terminate after the
// second grace each happen once in it. A balance that covers the next
// hour again ends it (the row is deleted); one that is positive again
// (not exhausted) resets the grace timers.
type BalanceEpisode struct {
	OrgID        string `gorm:"primaryKey"`
	StartedAt    time.Time
	LowMailedAt  *time.Time // the low-balance mail was queued
	ExhaustedAt  *time.Time // the balance reached zero; the grace counts from here
	StoppedAt    *time.Time // the grace passed: every running cluster was asked to stop
	TerminatedAt *time.Time // the second grace passed: the stopped clusters were asked to terminate
	UpdatedAt    time.Time  `gorm:"autoUpdateTime:false"` // the store's clock, not the wall's
}

// EnforcePolicy is the operator's settings for balance enforcement.
type EnforcePolicy struct {
	Grace          time.Duration // exhausted this long → stop; 0 = DefaultBalanceGrace
	TerminateGrace time.Duration // stopped this long, still unpaid → terminate; 0 = DefaultTerminateGrace
	BaseURL        string        // links in the mails
}

func (p EnforcePolicy) grace() time.Duration {
	if p.Grace <= 0 {
		return DefaultBalanceGrace
	}
	return p.Grace
}

func (p EnforcePolicy) terminateGrace() time.Duration {
	if p.TerminateGrace <= 0 {
		return DefaultTerminateGrace
	}
	return p.TerminateGrace
}

// OrgsToEnforce lists the organisations a balance pass looks at: those
// with a billed cluster running, those keeping a volume (it bills too, V3:
// B9) and those in an episode.
func (s *Store) OrgsToEnforce(ctx context.Context) ([]string, error) {
	var out []string
	err := s.db.WithContext(ctx).Raw("SELECT org_id FROM clusters WHERE ready_at IS NOT NULL AND status IN ? "+
		"UNION SELECT org_id FROM volumes WHERE deleted_at IS NULL "+
		"UNION SELECT org_id FROM balance_episodes ORDER BY org_id",
		[]ClusterStatus{StatusInstalling, StatusVerifying, StatusReady, StatusDegraded}).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: orgs to enforce: %w", err)
	}
	return out, nil
}

// BalanceStanding is what enforcement decides on: the one balance of B8
// (the ledger less the usage accumulating in open periods, written at the
// hour, owed already) and the burn rate of everything running (B1).
func (s *Store) BalanceStanding(ctx context.Context, orgID string) (balance, burn Money, err error) {
	f, err := s.CurrentBalance(ctx, orgID)
	if err != nil {
		return 0, 0, err
	}
	burn, err = s.BurnRate(ctx, orgID)
	return f.Balance(), burn, err
}

// EnforceResult says what one organisation's enforcement step did.
type EnforceResult struct {
	Balance, Burn Money
	Warned        bool     // the low-balance mail was queued
	Stopped       []string // clusters asked to stop
	Terminated    []string // clusters asked to terminate
	Ended         bool     // the episode ended: the balance covers the next hour again
}

// EnforceBalance is one step of B6 for one organisation, in one
// transaction under the organisation's lock: the low-balance mail once per
// episode when the balance will not cover the next hour at the current
// burn; once it is exhausted (<= 0) and the grace passed, every live
// cluster is asked to stop (reason balance) with one mail; once the second
// grace passed since the stop and it is still unpaid, the clusters the
// balance stopped are terminated with one mail. Volumes are never deleted
// for an unpaid balance (customer data): they are kept, keep billing, and
// every mail says so with their hourly rate. A top-up that restores the
// balance ends the episode; nothing later happens.
func (s *Store) EnforceBalance(ctx context.Context, orgID string, p EnforcePolicy) (EnforceResult, error) {
	var res EnforceResult
	err := s.Tx(ctx, func(tx *Store) error {
		if err := tx.lockOrg(ctx, orgID); err != nil {
			return err
		}
		now := tx.Now()
		bal, burn, err := tx.BalanceStanding(ctx, orgID)
		if err != nil {
			return err
		}
		res.Balance, res.Burn = bal, burn
		vols, err := tx.volumeBurn(ctx, orgID)
		if err != nil {
			return err
		}
		var ep BalanceEpisode
		err = tx.db.WithContext(ctx).Where("org_id = ?", orgID).Take(&ep).Error
		found := err == nil
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if bal > 0 && bal >= burn {
			if found {
				res.Ended = true
				return tx.db.WithContext(ctx).Where("org_id = ?", orgID).Delete(&BalanceEpisode{}).Error
			}
			return nil
		}
		if !found {
			ep = BalanceEpisode{OrgID: orgID, StartedAt: now}
		}
		if ep.LowMailedAt == nil {
			if err := tx.mailBalance(ctx, orgID, ep, BalanceMail{Topic: BalanceMailLow, Balance: bal, Burn: burn, Volumes: vols, StopAt: balanceStopTime(ep, bal, burn, now, p).UTC()}, p); err != nil {
				return err
			}
			if err := tx.queueOrgWebhooks(ctx, orgID, "", TypeBalanceLow, fmt.Sprintf("%s:%d", orgID, ep.StartedAt.Unix()), // X8
				map[string]any{"balance": DecimalUSD(bal), "burnPerHour": DecimalUSD(burn), "exhausted": bal <= 0}); err != nil {
				return err
			}
			ep.LowMailedAt, res.Warned = &now, true
		}
		switch {
		case bal > 0: // not exhausted (again): the grace timers start afresh
			ep.ExhaustedAt, ep.StoppedAt, ep.TerminatedAt = nil, nil, nil
		case ep.ExhaustedAt == nil:
			ep.ExhaustedAt = &now
		}
		if ep.ExhaustedAt != nil && ep.StoppedAt == nil && !now.Before(ep.ExhaustedAt.Add(p.grace())) {
			if res.Stopped, err = tx.stopForBalance(ctx, orgID, *ep.ExhaustedAt, p); err != nil {
				return err
			}
			ep.StoppedAt = &now
			if len(res.Stopped) > 0 {
				if err := tx.mailBalance(ctx, orgID, ep, BalanceMail{Topic: BalanceMailStopped, Balance: bal, Volumes: vols, Clusters: res.Stopped}, p); err != nil {
					return err
				}
			}
		}
		if ep.StoppedAt != nil && ep.TerminatedAt == nil && !now.Before(ep.StoppedAt.Add(p.terminateGrace())) {
			if res.Terminated, err = tx.terminateForBalance(ctx, orgID); err != nil {
				return err
			}
			ep.TerminatedAt = &now
			if len(res.Terminated) > 0 {
				if err := tx.mailBalance(ctx, orgID, ep, BalanceMail{Topic: BalanceMailTerminated, Balance: bal, Volumes: vols, Clusters: res.Terminated}, p); err != nil {
					return err
				}
			}
		}
		ep.UpdatedAt = now
		return tx.db.WithContext(ctx).Save(&ep).Error
	})
	return res, err
}

// stopForBalance asks every live cluster of the organisation to stop (B6)
// and returns their names.
func (s *Store) stopForBalance(ctx context.Context, orgID string, exhausted time.Time, p EnforcePolicy) ([]string, error) {
	var cs []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND status IN ? AND stop_requested_at IS NULL AND terminate_requested_at IS NULL",
		orgID, LiveStatuses).Order("created_at, id").Find(&cs).Error
	if err != nil {
		return nil, err
	}
	detail := fmt.Sprintf("The balance ran out at %s and was not topped up within %s.",
		exhausted.UTC().Format("2006-01-02 15:04 MST"), spell(p.grace()))
	var names []string
	for _, c := range cs {
		if _, err := s.RequestStop(ctx, orgID, c.ID, StopByBalance, detail); err != nil {
			return nil, err
		}
		names = append(names, c.Name)
	}
	return names, nil
}

// terminateForBalance terminates the clusters the balance stopped (B6).
func (s *Store) terminateForBalance(ctx context.Context, orgID string) ([]string, error) {
	var cs []Cluster
	err := s.db.WithContext(ctx).Where("org_id = ? AND stop_reason = ? AND terminate_requested_at IS NULL AND status IN ?",
		orgID, string(StopByBalance), append([]ClusterStatus{StatusStopped}, LiveStatuses...)).Order("created_at, id").Find(&cs).Error
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range cs {
		if c.Status != StatusStopped && c.StopRequestedAt == nil {
			continue // running again after a top-up: not this episode's
		}
		if _, err := s.RequestTerminate(ctx, orgID, c.ID, "balance enforcement (unpaid past the second grace)"); err != nil {
			return nil, err
		}
		names = append(names, c.Name)
	}
	return names, nil
}

// mailBalance queues one enforcement mail to every owner and admin, once
// per episode and topic (E1, E2).
func (s *Store) mailBalance(ctx context.Context, orgID string, ep BalanceEpisode, mail BalanceMail, p EnforcePolicy) error {
	to, err := s.managers(ctx, orgID)
	if err != nil {
		return err
	}
	mail.Grace, mail.TerminateGrace, mail.Link = p.grace(), p.terminateGrace(), strings.TrimRight(p.BaseURL, "/")+"/billing"
	return s.notifyEach(ctx, fmt.Sprintf("balance-%s:%s:%d", mail.Topic, orgID, ep.StartedAt.Unix()), to, mail)
}

// balanceStopTime is when, at the current burn, the balance's grace ends
// and the running clusters are stopped (B6): the moment the balance is
// (or was) exhausted plus the grace, as the billing page's "runs until"
// says (B6).
func balanceStopTime(ep BalanceEpisode, bal, burn Money, now time.Time, p EnforcePolicy) time.Time {
	switch {
	case bal <= 0 && ep.ExhaustedAt != nil:
		return maxTime(now, ep.ExhaustedAt.Add(p.grace()))
	case bal > 0:
		if at, ok := Forecast(now, bal, 0, burn); ok {
			return at.Add(p.grace())
		}
	}
	return now.Add(p.grace())
}

// volumeBurn is the hourly rate of the organisation's live volumes.
func (s *Store) volumeBurn(ctx context.Context, orgID string) (Money, error) {
	var vols Money
	err := s.db.WithContext(ctx).Model(&Volume{}).Where("org_id = ? AND deleted_at IS NULL", orgID).
		Select("COALESCE(SUM(size_gb * gb_hour), 0)").Scan(&vols).Error
	if err != nil {
		return 0, fmt.Errorf("models: volume burn of %s: %w", orgID, err)
	}
	return vols, nil
}

// spell writes a grace for people: "1 hour", "72 hours", "90 minutes".
func spell(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
