class ClientError(Exception):
    pass


class EndpointConnectionError(Exception):
    pass
