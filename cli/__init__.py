"""The ``odradek`` command line: an operator's tool that speaks only the Kafka protocol.

``odradek topic|group|cluster|config|log-dirs ...`` work against Odradek and any Kafka cluster
(:mod:`cli.client`, over :mod:`protocol.client`); ``odradek serve``, ``dump-log`` and
``check-log`` run the broker or read its files on this machine (:mod:`cli.commands.local`).
Human tables by default (rich), ``--format json`` for scripts.
"""
