package sweep

// MaxShards is the most shards a run may be split into, in every shard
// mode (run --shard I/N, run --shard-by key, merge --shards N): far more
// than any cluster runs at once, and few enough that a count is never a
// cause of memory use.
const MaxShards = 1_000_000

// CheckShardCount refuses a shard count above MaxShards or below 1, as an
// *InputError.
func CheckShardCount(n int) error {
	if n < 1 || n > MaxShards {
		return inputErrorf("shard count %d: need 1 to %d shards", n, MaxShards)
	}
	return nil
}
