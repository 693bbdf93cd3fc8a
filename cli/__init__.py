"""The `kafka-wire` command line: the broker's start-up (`serve`) and the tools that are Kafka clients."""
