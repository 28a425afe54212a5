package replica

import "errors"

// UserAgent is the User-Agent of every API request a replica makes:
// "ringfire/<id>".
func UserAgent(id string) string { return "ringfire/" + id }

// Ready reports why the replica is not ready, or nil.
func (r *Replica) Ready() error {
	if !r.Manager.Ready() {
		return errors.New("not a member of the ring yet: etcd unreachable or not answering (see the log)")
	}
	return nil
}
