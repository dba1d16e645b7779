// Package nodespec generates everything a cluster's nodes get and every
// command a customer copies, from the cluster's shape alone (SPEC §4,
// N1–N5; S1; V4; L9):
//
//   - node names and private addresses (N1, [DefaultNodes]);
//   - the environment every node gets: MASTER_ADDR/PRIMARY_ADDR,
//     MASTER_PORT/PRIMARY_PORT, NODE_RANK, NNODES, WORLD_SIZE,
//     GPUS_PER_NODE, NCCL_SOCKET_IFNAME and the user's own variables (N2,
//     N3, [Cluster.Env], [Cluster.EnvBlock]);
//   - the MPI/DeepSpeed hostfile and where it lives (N4, V4,
//     [Cluster.Hostfile], [Cluster.HostfilePath]);
//   - ready-made torchrun, mpirun and DeepSpeed commands and an NCCL
//     all-reduce test for the cluster's exact shape (N4, [Cluster.Commands]);
//   - SSH commands for every node, direct or through a gateway (N5,
//     [Cluster.SSH], [Cluster.SSHConfig]);
//   - the software layout: node roles, slurm.conf and gres.conf, `ray start`
//     lines (S1, [Cluster.Role], [Cluster.SlurmConf], [Cluster.RayStart]);
//   - the customer-facing notes on readiness and MALLOC_ARENA_MAX (L9, N2,
//     [ReadinessNote], [MallocHint]).
//
// It also parses what nodes print back: nccl-tests all_reduce_perf output
// for the automatic bandwidth check (X4, [ParseAllReduce]) and nvidia-smi
// inventories ([ParseSMIList], [ParseSMIQuery], [ParseSMITable]).
//
// Generators are pure functions of a [Cluster] value. Call
// [Cluster.Validate] first: generators never panic, but on a cluster that
// does not validate their output is not meaningful. Everything a generator
// writes into a shell command or a config file comes either from validated
// fields (names, addresses, ports, users: restricted character sets) or is
// shell-quoted ([Cluster.EnvBlock]), so a cluster that validates cannot
// inject shell syntax into what the customer pastes.
//
// Contracts this package assumes of the node image and the agent (the agent
// is what writes these files):
//
//   - each node's hostname is its [Node.Name] and every node resolves every
//     other node's name to its private address (/etc/hosts);
//   - passwordless SSH works between nodes by name on port 22 (mpirun and
//     DeepSpeed's pdsh launcher rely on it);
//   - the environment from [Cluster.EnvBlock] is in every login and
//     non-interactive SSH session (e.g. /etc/profile.d plus /etc/environment);
//   - nccl-tests is built with MPI at [NCCLTestBinary];
//   - on vm and bare_metal, /shared is exported from node-0 and mounted on
//     every node, with the hostfile at /shared/hostfile; on container
//     machines the hostfile is written to the SSH user's home on every node.
//
// The package is standard library only and imports nothing else from the
// module.
package nodespec
