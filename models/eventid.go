package models

import (
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"strings"
)

// Public event ids (X16, X19). A cluster event's row id comes from one
// sequence shared by every organisation, so showing it would tell each
// customer how busy the platform is between two of its own events. The
// public id ("evt_" and 26 letters and digits) is instead the row id and a
// tag of the organisation, encrypted as one AES block under a key derived
// from the session encryption key: it reveals nothing, differs for every
// organisation, and opens again to the row id, so the same id is the
// feed's cursor (after=, Last-Event-ID) and a webhook's event id. An id
// that does not open, or opens with another organisation's tag, is not a
// cursor (ErrBadEventID).

// ErrBadEventID is a cursor that is not an event id of this organisation.
var ErrBadEventID = errors.New("models: not an event id of this organisation")

// eventIDFallbackKey stands in for the session encryption key when none is
// set: tests and tools that build a Store by hand. Production refuses to
// start without SESSION_ENC_KEY, so its ids are keyed by its own secret.
var eventIDFallbackKey = []byte("clusterdeck: event ids without a session encryption key")

var eventIDEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// eventIDKey is the AES-128 key of public event ids.
func (s *Store) eventIDKey() []byte {
	secret := s.settings.MachineKeySecret
	if len(secret) == 0 {
		secret = eventIDFallbackKey
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("clusterdeck: public event ids"))
	return m.Sum(nil)[:16]
}

// eventIDTag is the half of the block that binds an id to its organisation.
func eventIDTag(orgID string) []byte {
	sum := sha256.Sum256([]byte("event-id-org:" + orgID))
	return sum[:8]
}

// PublicEventID is the public id of orgID's event (or cursor position) id.
func (s *Store) PublicEventID(orgID string, id int64) string {
	block, _ := aes.NewCipher(s.eventIDKey()) // a 16-byte key never fails
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(id))
	copy(b[8:], eventIDTag(orgID))
	block.Encrypt(b[:], b[:])
	return "evt_" + eventIDEncoding.EncodeToString(b[:])
}

// ClusterEventID is the public id of a cluster event.
func (s *Store) ClusterEventID(e ClusterEvent) string { return s.PublicEventID(e.OrgID, e.ID) }

// ParseEventID opens a public event id of orgID: the row id behind it, or
// ErrBadEventID.
func (s *Store) ParseEventID(orgID, public string) (int64, error) {
	enc, ok := strings.CutPrefix(public, "evt_")
	if !ok || len(enc) != 26 {
		return 0, ErrBadEventID
	}
	raw, err := eventIDEncoding.DecodeString(enc)
	if err != nil || len(raw) != 16 {
		return 0, ErrBadEventID
	}
	block, _ := aes.NewCipher(s.eventIDKey())
	block.Decrypt(raw, raw)
	id := int64(binary.BigEndian.Uint64(raw[:8]))
	if !hmac.Equal(raw[8:], eventIDTag(orgID)) || id < 0 {
		return 0, ErrBadEventID
	}
	return id, nil
}
