package models

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// WebhookDelivery is one event on its way to one endpoint: the outbox row
// written in the same transaction as the change (X8, like mail, E2). Body is
// the exact JSON POSTed on every attempt; EventID is its idempotency id.
// Deliveries of one endpoint and cluster go out in ID order.
type WebhookDelivery struct {
	ID            int64  `gorm:"primaryKey;autoIncrement"`
	EndpointID    string `gorm:"size:32"`
	OrgID         string `gorm:"size:32"`
	EnvID         string `gorm:"size:32"`
	EventID       string `gorm:"size:40"`
	Type          string `gorm:"size:40"`
	ClusterID     string `gorm:"size:32"` // "" for billing and test events
	Body          string `gorm:"type:text"`
	CreatedAt     time.Time
	Attempts      int
	NextAttemptAt time.Time
	DeliveredAt   *time.Time
	FailedAt      *time.Time // gave up after WebhookRetryFor
	LastStatus    int
	LastError     string `gorm:"size:1000"`
}

// WebhookAttempt is one row of an endpoint's delivery log.
type WebhookAttempt struct {
	ID         int64  `gorm:"primaryKey;autoIncrement"`
	DeliveryID int64  `gorm:"index"`
	EndpointID string `gorm:"size:32"`
	OrgID      string `gorm:"size:32"`
	EventID    string `gorm:"size:40"`
	Type       string `gorm:"size:40"`
	Attempt    int
	At         time.Time
	Status     int    // the HTTP status; 0 = no answer
	DurationMS int64  `gorm:"column:duration_ms"`
	Excerpt    string `gorm:"size:1000"` // the answer's first bytes
	Error      string `gorm:"size:500"`  // why there was no answer (timeout, refused address)
}

// OK reports whether the attempt delivered the event.
func (a WebhookAttempt) OK() bool { return a.Status >= 200 && a.Status < 300 }

// WebhookPayload is the JSON POSTed to an endpoint.
type WebhookPayload struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Data      any       `json:"data"`
}

// WebhookEventData is a cluster event's data: the cluster as the API shows
// it when the event happened, and the event itself.
type WebhookEventData struct {
	Cluster any                `json:"cluster"`
	Event   WebhookClusterStep `json:"event"`
}

// WebhookClusterStep is the cluster event row behind a webhook event.
type WebhookClusterStep struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"`
	Node    string    `json:"node,omitempty"`
	Step    string    `json:"step,omitempty"`
	Message string    `json:"message"`
}

// queueClusterWebhooks writes e's deliveries, in the caller's transaction.
func (s *Store) queueClusterWebhooks(ctx context.Context, c Cluster, e ClusterEvent) error {
	eps, err := s.webhooksWanting(ctx, c.OrgID, c.EnvID, e.Type)
	if err != nil || len(eps) == 0 {
		return err
	}
	var view any = map[string]any{"id": c.ID, "name": c.Name, "status": string(c.Status), "nodeCount": c.Nodes}
	if s.settings.WebhookClusterView != nil {
		if view, err = s.settings.WebhookClusterView(ctx, s, c); err != nil {
			return fmt.Errorf("models: webhook view of %s: %w", c.ID, err)
		}
	}
	data := WebhookEventData{Cluster: view, Event: WebhookClusterStep{At: e.At, Kind: e.Kind, Status: e.Status,
		Node: e.Node, Step: e.Step, Message: e.Message}}
	return s.insertDeliveries(ctx, eps, s.PublicEventID(c.OrgID, e.ID), e.Type, c.ID, e.At, data) // the id the feed shows
}

// queueOrgWebhooks writes a billing event's deliveries to the endpoints of
// envID (every environment of the organisation when ""), in the caller's
// transaction. key makes the event id stable, so a job that runs twice
// queues it once.
func (s *Store) queueOrgWebhooks(ctx context.Context, orgID, envID, typ, key string, data any) error {
	eps, err := s.webhooksWanting(ctx, orgID, envID, typ)
	if err != nil || len(eps) == 0 {
		return err
	}
	return s.insertDeliveries(ctx, eps, "evt_b"+shortHash(typ+":"+key), typ, "", s.Now(), data)
}

func (s *Store) webhooksWanting(ctx context.Context, orgID, envID, typ string) ([]WebhookEndpoint, error) {
	q := s.db.WithContext(ctx).Where("org_id = ? AND enabled = ? AND types LIKE ?", orgID, true, "%"+typ+"%")
	if envID != "" {
		q = q.Where("env_id = ?", envID)
	}
	var all []WebhookEndpoint
	if err := q.Order("id").Find(&all).Error; err != nil {
		return nil, fmt.Errorf("models: webhook endpoints: %w", err)
	}
	out := all[:0]
	for _, w := range all {
		if w.Wants(typ) {
			out = append(out, w)
		}
	}
	return out, nil
}

func (s *Store) insertDeliveries(ctx context.Context, eps []WebhookEndpoint, eventID, typ, clusterID string, at time.Time, data any) error {
	body, err := json.Marshal(WebhookPayload{ID: eventID, Type: typ, CreatedAt: at.UTC(), Data: data})
	if err != nil {
		return fmt.Errorf("models: webhook body: %w", err)
	}
	now := s.Now()
	for _, w := range eps {
		d := WebhookDelivery{EndpointID: w.ID, OrgID: w.OrgID, EnvID: w.EnvID, EventID: eventID, Type: typ, ClusterID: clusterID,
			Body: string(body), CreatedAt: now, NextAttemptAt: now}
		err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "endpoint_id"}, {Name: "event_id"}}, DoNothing: true}).Create(&d).Error
		if err != nil {
			return fmt.Errorf("models: queue webhook %s: %w", eventID, err)
		}
	}
	return nil
}

// SendTestWebhook queues a webhook.test event to the endpoint, whatever its
// types (owners and admins, audited).
func (x Actions) SendTestWebhook(ctx context.Context, id string) (WebhookDelivery, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookDelivery{}, err
	}
	var d WebhookDelivery
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		w, err := tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, id)
		if err != nil {
			return nil, err
		}
		eventID := NewID("evt")
		data := map[string]any{"message": "A test event sent by " + x.a.Name + ".", "endpointId": w.ID}
		if err := tx.insertDeliveries(ctx, []WebhookEndpoint{w}, eventID, TypeTest, "", tx.Now(), data); err != nil {
			return nil, err
		}
		if err := tx.db.WithContext(ctx).Where("endpoint_id = ? AND event_id = ?", w.ID, eventID).Take(&d).Error; err != nil {
			return nil, err
		}
		return x.audit("webhook.test", w.ID, eventID), nil
	})
	return d, err
}

// RedeliverWebhook sends a delivery of the endpoint again, with the same
// event id and body (owners and admins, audited): it goes out on the next
// tick, after any earlier pending event of the same cluster.
func (x Actions) RedeliverWebhook(ctx context.Context, endpointID string, deliveryID int64) (WebhookDelivery, error) {
	if err := x.canManageWebhooks(); err != nil {
		return WebhookDelivery{}, err
	}
	var d WebhookDelivery
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		w, err := tx.WebhookForEnv(ctx, x.a.OrgID, x.a.EnvID, endpointID)
		if err != nil {
			return nil, err
		}
		err = tx.db.WithContext(ctx).Where("endpoint_id = ? AND id = ?", w.ID, deliveryID).Take(&d).Error
		if err != nil {
			return nil, notFound(err, fmt.Sprintf("webhook delivery %d", deliveryID))
		}
		now := tx.Now()
		if err := tx.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", d.ID).
			Updates(map[string]any{"delivered_at": nil, "failed_at": nil, "next_attempt_at": now, "created_at": now}).Error; err != nil {
			return nil, err
		}
		d.DeliveredAt, d.FailedAt, d.NextAttemptAt, d.CreatedAt = nil, nil, now, now
		return x.audit("webhook.redeliver", w.ID, d.EventID), nil
	})
	return d, err
}

// WebhookLog is an endpoint's delivery log, newest first, of the last
// WebhookLogDays days.
func (s *Store) WebhookLog(ctx context.Context, w WebhookEndpoint, limit int) ([]WebhookAttempt, error) {
	var out []WebhookAttempt
	err := s.db.WithContext(ctx).Where("endpoint_id = ? AND org_id = ? AND at >= ?", w.ID, w.OrgID,
		s.Now().AddDate(0, 0, -WebhookLogDays)).Order("id DESC").Limit(limit).Find(&out).Error
	return out, err
}

// PendingWebhooks counts an endpoint's deliveries still to send.
func (s *Store) PendingWebhooks(ctx context.Context, w WebhookEndpoint) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&WebhookDelivery{}).
		Where("endpoint_id = ? AND delivered_at IS NULL AND failed_at IS NULL", w.ID).Count(&n).Error
	return n, err
}

// PruneWebhookLog forgets delivery log rows, and settled deliveries, older
// than WebhookLogDays.
func (s *Store) PruneWebhookLog(ctx context.Context) (int64, error) {
	cut := s.Now().AddDate(0, 0, -WebhookLogDays)
	a := s.db.WithContext(ctx).Where("at < ?", cut).Delete(&WebhookAttempt{})
	if a.Error != nil {
		return 0, a.Error
	}
	d := s.db.WithContext(ctx).Where("created_at < ? AND (delivered_at IS NOT NULL OR failed_at IS NOT NULL)", cut).Delete(&WebhookDelivery{})
	return a.RowsAffected + d.RowsAffected, d.Error
}

// ---- the delivery job's side ----

// WebhookClaimTTL is how long a runner holds an endpoint.
const WebhookClaimTTL = 2 * time.Minute

// WebhookOrgShare is how many of one organisation's endpoints may be
// claimed at once (A4, X8), counted from the claims held when a runner
// claims (two runners claiming at the same instant may each take it): one
// tenant's slow or failing endpoints hold at most this many senders, and
// the others' endpoints are claimed beside them.
const WebhookOrgShare = 2

// ClaimWebhookEndpoints claims up to limit enabled endpoints with a due
// delivery for holder until now+ttl, fairly: organisations take turns
// (round robin in id order), and an organisation already holding
// WebhookOrgShare claimed endpoints gets no more. It returns them and the
// claim id to release them with. An endpoint is claimed by one runner at
// a time: the claim is a compare-and-swap on claimed_until.
func (s *Store) ClaimWebhookEndpoints(ctx context.Context, holder string, limit int, ttl time.Duration) ([]WebhookEndpoint, string, error) {
	now := s.Now()
	claim := holder + ":" + NewID("clm")
	if len(claim) > 64 {
		claim = NewID("clm")
	}
	type cand struct{ ID, OrgID string }
	var due []cand
	err := s.db.WithContext(ctx).Raw(`SELECT e.id, e.org_id FROM webhook_endpoints e
		WHERE e.enabled = ? AND (e.claimed_until IS NULL OR e.claimed_until < ?)
		  AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id
		    AND d.delivered_at IS NULL AND d.failed_at IS NULL AND d.next_attempt_at <= ?)
		ORDER BY e.id LIMIT 2000`, true, now, now).Scan(&due).Error
	if err != nil {
		return nil, "", fmt.Errorf("models: claim webhook endpoints: %w", err)
	}
	var held []struct {
		OrgID string
		N     int
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT org_id, COUNT(*) AS n FROM webhook_endpoints WHERE claimed_until >= ? GROUP BY org_id`, now).
		Scan(&held).Error; err != nil {
		return nil, "", fmt.Errorf("models: claim webhook endpoints: %w", err)
	}
	share := map[string]int{}
	for _, h := range held {
		share[h.OrgID] = h.N
	}
	// Round robin: each organisation's first endpoint, then each one's
	// second, while its share lasts.
	var orgs []string
	byOrg := map[string][]string{}
	for _, c := range due {
		if _, ok := byOrg[c.OrgID]; !ok {
			orgs = append(orgs, c.OrgID)
		}
		byOrg[c.OrgID] = append(byOrg[c.OrgID], c.ID)
	}
	var pick []string
	for round := 0; len(pick) < limit && round < WebhookOrgShare; round++ {
		for _, o := range orgs {
			if len(pick) < limit && round < len(byOrg[o]) && share[o] < WebhookOrgShare {
				pick = append(pick, byOrg[o][round])
				share[o]++
			}
		}
	}
	var out []WebhookEndpoint
	if len(pick) == 0 {
		return out, claim, nil
	}
	err = s.Tx(ctx, func(tx *Store) error {
		if err := tx.db.Exec(`UPDATE webhook_endpoints SET claimed_by = ?, claimed_until = ?
			WHERE id IN ? AND enabled = ? AND (claimed_until IS NULL OR claimed_until < ?)`,
			claim, now.Add(ttl), pick, true, now).Error; err != nil {
			return err
		}
		return tx.db.Where("claimed_by = ?", claim).Order("id").Find(&out).Error
	})
	if err != nil {
		return nil, "", fmt.Errorf("models: claim webhook endpoints: %w", err)
	}
	return out, claim, nil
}

// ReleaseWebhookEndpoint ends claim on the endpoint.
func (s *Store) ReleaseWebhookEndpoint(ctx context.Context, id, claim string) error {
	return s.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ? AND claimed_by = ?", id, claim).
		Updates(map[string]any{"claimed_by": "", "claimed_until": nil}).Error
}

// DueWebhookDeliveries lists up to limit deliveries of a claimed endpoint
// to send now, in order: a delivery waits while an earlier one of the same
// cluster is still pending (not yet due, or failing).
func (s *Store) DueWebhookDeliveries(ctx context.Context, w WebhookEndpoint, limit int) ([]WebhookDelivery, error) {
	var pending []WebhookDelivery
	err := s.db.WithContext(ctx).Where("endpoint_id = ? AND delivered_at IS NULL AND failed_at IS NULL", w.ID).
		Order("id").Limit(max(limit*4, 200)).Find(&pending).Error
	if err != nil {
		return nil, err
	}
	now := s.Now()
	blocked := map[string]bool{}
	var out []WebhookDelivery
	for _, d := range pending {
		if blocked[d.ClusterID] {
			continue
		}
		if d.NextAttemptAt.After(now) {
			blocked[d.ClusterID] = true
			continue
		}
		out = append(out, d)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// WebhookResult is one attempt's outcome as the sender saw it.
type WebhookResult struct {
	Status   int // 0 = no answer
	Duration time.Duration
	Excerpt  string
	Err      string
}

// OK reports a 2xx answer.
func (r WebhookResult) OK() bool { return r.Status >= 200 && r.Status < 300 }

// WebhookBackoff is the wait after attempt n fails: 30 s doubling up to
// 4 h, ±20 % jitter so receivers coming back are not hit all at once.
func WebhookBackoff(attempt int) time.Duration {
	base := min(30*time.Second<<min(max(attempt-1, 0), 12), 4*time.Hour)
	return time.Duration(float64(base) * (0.8 + 0.4*rand.Float64()))
}

// RecordWebhookAttempt writes an attempt's log row and outcome in one
// transaction: delivered; or retried after a backoff, given up after
// WebhookRetryFor; and when the endpoint has failed for WebhookRetryFor
// without a success it is paused and its organisation's owners and admins
// are mailed (X8, E2). It returns whether the endpoint was paused now.
func (s *Store) RecordWebhookAttempt(ctx context.Context, w WebhookEndpoint, d WebhookDelivery, r WebhookResult, baseURL string) (bool, error) {
	paused := false
	err := s.Tx(ctx, func(tx *Store) error {
		now := tx.Now()
		a := WebhookAttempt{DeliveryID: d.ID, EndpointID: w.ID, OrgID: w.OrgID, EventID: d.EventID, Type: d.Type,
			Attempt: d.Attempts + 1, At: now, Status: r.Status, DurationMS: r.Duration.Milliseconds(),
			Excerpt: truncateRunes(r.Excerpt, 1000), Error: truncateRunes(r.Err, 500)}
		if err := tx.db.WithContext(ctx).Create(&a).Error; err != nil {
			return err
		}
		set := map[string]any{"attempts": gorm.Expr("attempts + 1"), "last_status": r.Status, "last_error": truncateRunes(r.Err, 1000)}
		if d.Type == TypeTest { // X8: a test is one try, and says nothing of the endpoint's real deliveries
			if r.OK() {
				set["delivered_at"] = now
			} else {
				set["failed_at"] = now
			}
			return tx.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", d.ID).Updates(set).Error
		}
		if r.OK() {
			set["delivered_at"] = now
			if err := tx.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", d.ID).Updates(set).Error; err != nil {
				return err
			}
			return tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ? AND failing_since IS NOT NULL", w.ID).
				Update("failing_since", nil).Error
		}
		set["next_attempt_at"] = now.Add(WebhookBackoff(d.Attempts + 1))
		if !now.Before(d.CreatedAt.Add(WebhookRetryFor)) {
			set["failed_at"] = now
		}
		if err := tx.db.WithContext(ctx).Model(&WebhookDelivery{}).Where("id = ?", d.ID).Updates(set).Error; err != nil {
			return err
		}
		if err := tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ? AND failing_since IS NULL", w.ID).
			Update("failing_since", now).Error; err != nil {
			return err
		}
		var cur WebhookEndpoint
		if err := tx.db.WithContext(ctx).Where("id = ?", w.ID).Take(&cur).Error; err != nil {
			return notFound(err, "webhook endpoint "+w.ID)
		}
		if !cur.Enabled || cur.FailingSince == nil || now.Before(cur.FailingSince.Add(WebhookRetryFor)) {
			return nil
		}
		reason := "Every delivery failed since " + cur.FailingSince.UTC().Format("2006-01-02 15:04 MST") + "."
		res := tx.db.WithContext(ctx).Model(&WebhookEndpoint{}).Where("id = ? AND enabled = ?", w.ID, true).
			Updates(map[string]any{"enabled": false, "paused_reason": reason, "updated_at": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		paused = true
		return tx.mailWebhookPaused(ctx, cur, reason, baseURL)
	})
	return paused, err
}

func (s *Store) mailWebhookPaused(ctx context.Context, w WebhookEndpoint, reason, baseURL string) error {
	to, err := s.managers(ctx, w.OrgID)
	if err != nil {
		return err
	}
	return s.notifyEach(ctx, fmt.Sprintf("webhook-paused:%s:%d", w.ID, w.FailingSince.Unix()), to, WebhookPausedMail{
		EndpointID: w.ID, URL: w.URL, Reason: reason, Link: strings.TrimRight(baseURL, "/") + "/settings/webhooks"})
}
