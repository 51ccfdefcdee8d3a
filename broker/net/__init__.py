"""The network layer: one acceptor, N processor loops, connections with a transport and a session.

* :mod:`broker.net.acceptor`: listens on the broker's listeners and hands sockets to processors.
* :mod:`broker.net.processor`: a thread with its own uvloop event loop, owning its connections.
* :mod:`broker.net.connection`: frames in, responses out, in request order, with backpressure.
* :mod:`broker.net.transport`: how bytes cross the socket (plaintext keeps ``sendfile``; TLS
  will encrypt in user space, as Kafka's ``SslTransportLayer`` does).
* :mod:`broker.net.session`: who is on the other end (Kafka's ``KafkaPrincipal``, listener,
  security protocol, client software).

Kafka's ``SocketServer`` (Acceptor, Processor, KafkaChannel) is the model.
"""
