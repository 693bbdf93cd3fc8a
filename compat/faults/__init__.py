"""Faults as Jepsen injects them: brokers and ZooKeeper in network namespaces, nemeses, recorded
histories of real clients, and a checker that finds the anomalies in them.

- history.py: the operations a workload records (one JSON object per line) and the recorder.
- checker.py: reads a history, reports each anomaly class with examples.
- netns.py:   network namespaces on a private bridge (allocated under a lock: parallel runs never
              collide); partitions and loss (iptables), delay (tc netem, else delay_queue.py, else
              delay_relay.py).
- delay_queue.py: accepts every packet a namespace sends (iptables NFQUEUE) 200 ms late.
- delay_relay.py: a TCP relay inside a namespace that sends what the node sends 200 ms late.
- cluster.py: a 3-node ZooKeeper ensemble and kafka-wire brokers, each in its own namespace.
- nemesis.py: the faults, each a start/heal pair.
- workloads.py: the queue workload with confluent-kafka (librdkafka) clients.
- run.py:     `kafka-wire compat faults`: nemesis x workload runs (--parallel N), each result stored as
              JSON (compat/faults-results/ for the full form; --resume), compat/FAULTS.md from all.
"""
