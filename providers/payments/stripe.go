package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"github.com/stripe/stripe-go/v76/webhook"
)

// Stripe is the Provider on Stripe's API (stripe-go pins API version
// 2023-10-16; a webhook endpoint on another version is read for
// WebhookFields only, and the operator's page says so).
type Stripe struct {
	api           *client.API
	webhookSecret string
}

// NewStripe builds the Stripe provider.
func NewStripe(cfg Config) *Stripe {
	bc := &stripe.BackendConfig{LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if cfg.APIURL != "" {
		bc.URL = stripe.String(cfg.APIURL)
	}
	backends := &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, bc),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, bc),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, bc),
	}
	return &Stripe{api: client.New(cfg.SecretKey, backends), webhookSecret: cfg.WebhookSecret}
}

// TestMode implements Provider.
func (*Stripe) TestMode() bool { return false }

// CreateCheckout implements Provider: a Checkout Session in payment mode
// that saves the card for off-session use, named by the top-up in its
// metadata and idempotent on it.
func (s *Stripe) CreateCheckout(ctx context.Context, p CheckoutParams) (Checkout, error) {
	if err := checkTopUp(p); err != nil {
		return Checkout{}, err
	}
	amount, _ := cents(p.Amount)
	meta := map[string]string{"org_id": p.OrgID, "top_up_id": p.TopUpID}
	params := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL:        stripe.String(p.SuccessURL),
		CancelURL:         stripe.String(p.CancelURL),
		ClientReferenceID: stripe.String(p.TopUpID),
		Metadata:          meta,
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:    stripe.String(string(stripe.CurrencyUSD)),
				UnitAmount:  stripe.Int64(amount),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{Name: stripe.String("Clusterdeck credit")},
			},
		}},
		PaymentIntentData: &stripe.CheckoutSessionPaymentIntentDataParams{
			SetupFutureUsage: stripe.String("off_session"),
			Metadata:         meta,
		},
	}
	if p.CustomerID != "" {
		params.Customer = stripe.String(p.CustomerID)
	} else {
		params.CustomerCreation = stripe.String(string(stripe.CheckoutSessionCustomerCreationAlways))
		if p.CustomerEmail != "" {
			params.CustomerEmail = stripe.String(p.CustomerEmail)
		}
	}
	params.Context = ctx
	params.SetIdempotencyKey("top-up:" + p.TopUpID)
	cs, err := s.api.CheckoutSessions.New(params)
	if err != nil {
		return Checkout{}, fmt.Errorf("payments: checkout for %s: %w", p.TopUpID, err)
	}
	return Checkout{ID: cs.ID, URL: cs.URL}, nil
}

// ParseWebhook implements Provider with stripe-go's webhook package over
// the raw body. An event of another API version than stripe-go's is read
// too (the endpoint may have been created on any version): only
// WebhookFields are used, each decoded on its own, so a field whose shape
// changed reads as empty instead of failing the whole event (B4).
func (s *Stripe) ParseWebhook(payload []byte, signature string) (Event, error) {
	e, err := webhook.ConstructEventWithOptions(payload, signature, s.webhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		if errors.Is(err, webhook.ErrInvalidHeader) || errors.Is(err, webhook.ErrNoValidSignature) ||
			errors.Is(err, webhook.ErrNotSigned) || errors.Is(err, webhook.ErrTooOld) {
			return Event{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
		}
		return Event{}, fmt.Errorf("payments: webhook: %w", err)
	}
	out := Event{ID: e.ID, Type: string(e.Type), APIVersion: e.APIVersion}
	if e.Data == nil || !slices.Contains(WebhookEvents, out.Type) {
		return out, nil
	}
	obj, err := decodeObject(e.Data.Raw)
	if err != nil {
		return Event{}, fmt.Errorf("payments: webhook %s (%s, API version %s): %w", e.ID, out.Type, e.APIVersion, err)
	}
	out.ObjectID = obj.str("id")
	meta := obj.object("metadata")
	out.OrgID, out.TopUpID, out.ChargeID = meta.str("org_id"), meta.str("top_up_id"), meta.str("charge_id")
	out.CustomerID = obj.id("customer")
	switch out.Type {
	case EventCheckoutCompleted, EventCheckoutAsyncSucceeded, EventCheckoutAsyncFailed:
		out.PaymentIntentID = obj.id("payment_intent")
		out.Paid = obj.str("payment_status") == string(stripe.CheckoutSessionPaymentStatusPaid)
		amount, currency := obj.cents("amount_total"), obj.str("currency")
		// Adaptive Pricing shows the buyer another currency; what we are
		// paid is the session's source currency and amount.
		if cc := obj.object("currency_conversion"); cc != nil {
			amount, currency = cc.cents("amount_total"), cc.str("source_currency")
		}
		out.Amount, out.Currency = amount, strings.ToLower(currency)
	default: // payment_intent.*
		out.PaymentIntentID = out.ObjectID
		out.Amount, out.Currency = obj.cents("amount_received"), strings.ToLower(obj.str("currency"))
		out.Paid = obj.str("status") == string(stripe.PaymentIntentStatusSucceeded)
		out.PaymentMethodID = obj.id("payment_method")
		lpe := obj.object("last_payment_error")
		out.FailureCode, out.FailureMessage = lpe.str("code"), lpe.str("message")
	}
	return out, nil
}

// object is an event's data.object, read field by field.
type object map[string]any

func decodeObject(raw []byte) (object, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var o object
	if err := d.Decode(&o); err != nil || o == nil {
		return nil, fmt.Errorf("data.object is not an object: %v", err)
	}
	return o, nil
}

// str is a string field, "" when absent or of another type.
func (o object) str(k string) string {
	v, _ := o[k].(string)
	return v
}

// object is a nested object field, nil when absent or of another type.
func (o object) object(k string) object {
	v, _ := o[k].(map[string]any)
	return v
}

// id is an expandable field's id: the bare id, or the expanded object's.
func (o object) id(k string) string {
	if v, ok := o[k].(string); ok {
		return v
	}
	return o.object(k).str("id")
}

// cents is an amount field in micro-dollars; 0 when absent, negative or not
// a whole number (never a guess: it then matches no recorded amount).
func (o object) cents(k string) int64 {
	n, ok := o[k].(json.Number)
	if !ok {
		return 0
	}
	c, err := n.Int64()
	if err != nil || c <= 0 || c > math.MaxInt64/microPerCent {
		return 0
	}
	return c * microPerCent
}

// ChargeOffSession implements Provider: a confirmed off-session
// PaymentIntent on the saved card, idempotent on p.IdempotencyKey.
func (s *Stripe) ChargeOffSession(ctx context.Context, p ChargeParams) (Charge, error) {
	amount, err := cents(p.Amount)
	if err != nil {
		return Charge{}, err
	}
	if p.IdempotencyKey == "" || p.CustomerID == "" || p.PaymentMethodID == "" {
		return Charge{}, errors.New("payments: an off-session charge needs a key, a customer and a saved card")
	}
	params := &stripe.PaymentIntentParams{
		Amount:        stripe.Int64(amount),
		Currency:      stripe.String(string(stripe.CurrencyUSD)),
		Customer:      stripe.String(p.CustomerID),
		PaymentMethod: stripe.String(p.PaymentMethodID),
		Confirm:       stripe.Bool(true),
		OffSession:    stripe.Bool(true),
		Description:   stripe.String("Clusterdeck auto-recharge"),
		Metadata:      map[string]string{"org_id": p.OrgID, "charge_id": p.ChargeID},
	}
	params.Context = ctx
	params.SetIdempotencyKey(p.IdempotencyKey)
	pi, err := s.api.PaymentIntents.New(params)
	var se *stripe.Error
	if errors.As(err, &se) && se.Type == stripe.ErrorTypeCard {
		c := Charge{Status: ChargeFailed, FailureCode: string(se.Code), DeclineCode: string(se.DeclineCode), Message: se.Msg,
			AuthenticationRequired: se.Code == stripe.ErrorCodeAuthenticationRequired}
		if se.PaymentIntent != nil {
			c.PaymentIntentID = se.PaymentIntent.ID
		}
		return c, nil
	}
	if err != nil {
		return Charge{}, fmt.Errorf("payments: charge %s: %w", p.ChargeID, err)
	}
	if pi.Status == stripe.PaymentIntentStatusRequiresAction {
		return Charge{PaymentIntentID: pi.ID, Status: ChargeFailed, FailureCode: string(stripe.ErrorCodeAuthenticationRequired),
			AuthenticationRequired: true}, nil
	}
	return Charge{PaymentIntentID: pi.ID, Status: chargeStatus(pi.Status)}, nil
}

func chargeStatus(s stripe.PaymentIntentStatus) string {
	switch s {
	case stripe.PaymentIntentStatusSucceeded:
		return ChargeSucceeded
	case stripe.PaymentIntentStatusProcessing:
		return ChargePending
	}
	return ChargeFailed // requires_payment_method, canceled…
}
