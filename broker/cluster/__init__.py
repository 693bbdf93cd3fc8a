"""Cluster mode: brokers coordinated by ZooKeeper (`zookeeper.connect`), partitions replicated.

ZooKeeper holds the cluster's metadata under Kafka's ZooKeeper-mode paths (zk_metadata.py); a
controller elected through it assigns replicas and elects leaders (controller.py); each broker
watches the partition states and leads or follows (replica_manager.py), followers fetching from
leaders with Fetch and their replica id (replica_fetcher.py). The controller also moves partitions
between brokers (AlterPartitionReassignments; decisions in partition_reassignment.py).
ClusterBroker (cluster_broker.py) is the Broker of node.py with these underneath; without
`zookeeper.connect` none of this runs.
"""
