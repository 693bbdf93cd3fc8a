"""Storage: a partition is a directory of segments; append, read, recover, retain.

Entry points: `log.log_manager.LogManager` (all partitions of a broker) and
`log.partition_log.PartitionLog` (one partition).
"""
