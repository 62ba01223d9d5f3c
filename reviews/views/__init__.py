"""Views of the reviews app, one module per page family. Views stay thin: validate, call one
selector or service, render."""
