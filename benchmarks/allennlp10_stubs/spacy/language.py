class Language:
    pass
