//! Words of the page in French (the default) and English, money and date
//! formatting, and the language switch remembered in localStorage.

const STORE_KEY = 'tresor.lang';

const FR = {
  'skip': 'Aller au jeu',
  'nav.game': 'Jouer',
  'nav.history': 'Historique',
  'nav.account': 'Mon compte',
  'nav.rules': 'Règlement',
  'nav.login': 'Connexion',
  'nav.register': 'Inscription',
  'nav.logout': 'Déconnexion',
  'nav.label': 'Navigation principale',
  'lang.switch': 'English',
  'lang.switch.label': 'Switch to English',
  'balance': 'Solde',
  'balance.none': '—',
  'compass': 'Boussole',
  'compass.label': 'Boussole : {dir}',
  'compass.idle': 'Boussole, en attente du lancer',
  'steps': 'Cases',
  'found': 'Symboles',
  'found.none': 'Aucun symbole pour l\'instant',
  'map.label': 'Carte de l\'île, {w} × {h} cases',
  'stake': 'Mise',
  'play': 'Jouer',
  'throw': 'Lancer',
  'throws': 'Lancers',
  'throws.left': '{n} lancer(s) restant(s) sur 4',
  'reason.login': 'Connectez-vous ou inscrivez-vous pour jouer.',
  'reason.funds': 'Solde insuffisant pour une mise de {stake}.',
  'reason.closed': 'Les ventes ne sont pas ouvertes.',
  'reason.closed.at': 'Les ventes ouvriront le {date}.',
  'reason.deposit': 'Approvisionner mon compte',
  'status.buying': 'Achat de l\'unité de jeu…',
  'status.ready': 'Appuyez sur « Lancer » pour déplacer le totem.',
  'status.throwing': 'Lancer en cours…',
  'status.lost': 'Partie terminée : pas de gain cette fois.',
  'status.won': 'Partie terminée : vous avez gagné {amount} !',
  'status.resumed': 'Partie n° {id} reprise là où elle s\'était arrêtée.',
  'status.idle': 'Choisissez votre mise puis appuyez sur « Jouer ».',
  'replay.banner': 'Vous revoyez la partie n° {id} ({stake}).',
  'replay.back': 'Retour au jeu',
  'howto.title': 'Comment jouer',
  'howto.1': 'Neuf coffres sont cachés sur l\'île.',
  'howto.2': 'Appuyez sur « Lancer » : la boussole indique une direction et le compteur un nombre de cases. Le totem se déplace d\'autant.',
  'howto.3': 'Chaque coffre que le totem traverse ou sur lequel il s\'arrête s\'ouvre : vide (une croix) ou un symbole, qui se range à droite de la carte.',
  'howto.4': 'Vous avez quatre lancers. Les combinaisons gagnantes pour votre mise :',
  'howto.close': 'C\'est parti !',
  'win.title': 'Félicitations !',
  'win.text': 'Vous avez gagné',
  'win.credited': 'Votre gain est crédité sur votre solde.',
  'win.close': 'Continuer',
  'combo.3': '3 × {sym}',
  'combo.2': '2 × {sym}',
  'combo.1': '1 × {sym}',
  'sym.candlestick': 'chandelier',
  'sym.monkey': 'singe',
  'sym.sapphire': 'saphir',
  'sym.skull': 'tête de mort',
  'sym.empty': 'coffre vide',
  'dir.N': 'nord', 'dir.NE': 'nord-est', 'dir.E': 'est', 'dir.SE': 'sud-est',
  'dir.S': 'sud', 'dir.SW': 'sud-ouest', 'dir.W': 'ouest', 'dir.NW': 'nord-ouest',
  'dirshort.N': 'N', 'dirshort.E': 'E', 'dirshort.S': 'S', 'dirshort.W': 'O',
  'say.throw': 'Lancer {n} : direction {dir}, {steps} case(s).',
  'say.chest': 'Coffre ouvert : {what}.',
  'say.win': 'Partie gagnée : {amount}.',
  'say.lose': 'Partie perdue.',
  'login.title': 'Connexion',
  'register.title': 'Inscription',
  'username': 'Nom d\'utilisateur',
  'password': 'Mot de passe',
  'password.hint': '10 caractères au moins.',
  'adult': 'Je déclare être majeur(e).',
  'accept': 'J\'accepte le règlement du jeu.',
  'accept.read': 'Lire le règlement',
  'login.submit': 'Se connecter',
  'register.submit': 'Créer mon compte',
  'login.switch': 'Pas encore de compte ? Inscrivez-vous.',
  'register.switch': 'Déjà inscrit(e) ? Connectez-vous.',
  'account.title': 'Mon compte',
  'account.user': 'Joueur',
  'account.balance': 'Disponibilités',
  'account.deposit': 'Dépôt de démonstration : {amount}',
  'account.deposited': '{amount} ajoutés à votre solde.',
  'account.demo': 'Mode démonstration : l\'argent est fictif.',
  'history.title': 'Historique de jeu',
  'history.empty': 'Aucune partie pour l\'instant.',
  'history.more': 'Afficher plus',
  'history.when': 'Date',
  'history.unit': 'Unité de jeu',
  'history.unit.ref': 'Émission {e} · bloc {b} · n° {i}',
  'history.stake': 'Mise',
  'history.state': 'État',
  'history.outcome': 'Résultat',
  'history.action': 'Partie',
  'state.in_progress': 'En cours',
  'state.finished': 'Terminée',
  'outcome.win': 'Gagnante : {amount}',
  'outcome.lose': 'Perdante',
  'history.replay': 'Revoir',
  'history.resume': 'Reprendre',
  'rules.title': 'Règlement du jeu',
  'rules.other': 'Read in English',
  'rules.loading': 'Chargement du règlement…',
  'close': 'Fermer',
  'footer.risk': 'Jouer comporte des risques : endettement, isolement, dépendance. Pour être aidé, appelez le 09-74-75-13-13 (appel non surtaxé)',
  'footer.link': 'joueurs-info-service.fr',
  'footer.rules': 'Règlement du jeu',
  'footer.adults': 'Jeu interdit aux mineurs.',
  'error.network': 'Le serveur ne répond pas. Vérifiez votre connexion et réessayez.',
  'error.generic': 'Une erreur est survenue.',
  'sales.closed': 'Les ventes ne sont pas encore ouvertes.',
  'sales.opens': 'Les ventes ouvriront le {date}.',
  'nav.fair': 'Équité',
  'fair.title': 'Équité du jeu',
  'fair.intro': 'Les gains de chaque bloc de 450 000 unités de jeu sont tirés avant la vente à partir d\'un secret. L\'empreinte de ce secret, sha256(secret), appelée engagement, est publiée ici avant que la première unité du bloc ne soit vendue : le secret ne peut donc plus changer.',
  'fair.after': 'Quand le bloc est épuisé ou que son émission est close, le secret est publié. Chacun peut alors vérifier que sha256(secret) est bien l\'engagement publié, puis recalculer tout le bloc et comparer avec les parties jouées.',
  'fair.how': 'Pour vérifier un bloc clos, lancez la commande indiquée en face de lui (tresor block verify --secret … --commitment … --stake …), ou suivez docs/AUDIT.md avec votre propre programme.',
  'fair.id': 'Bloc',
  'fair.emission': 'Émission',
  'fair.stake': 'Mise',
  'fair.state': 'État',
  'fair.units': 'Unités vendues',
  'fair.commitment': 'Engagement sha256(secret)',
  'fair.secret': 'Secret',
  'fair.sold': '{sold} / {total}',
  'fair.secret.pending': 'Publié à la clôture du bloc',
  'fair.verify': 'Vérifier :',
  'fair.empty': 'Aucun bloc pour l\'instant.',
  'block.state.open': 'En vente',
  'block.state.suspended': 'Suspendu',
  'block.state.sold_out': 'Épuisé',
  'block.state.closed': 'Clos',
  'caps.legend': 'Plafonds sur 7 jours glissants',
  'caps.title': 'Mes plafonds sur 7 jours',
  'caps.deposit': 'Dépôts (€)',
  'caps.stake': 'Mises (€)',
  'caps.hint': 'Vous pourrez les baisser à tout moment ; une hausse ne s\'applique qu\'après 48 heures.',
  'caps.inforce': 'En vigueur',
  'caps.used': 'Utilisé',
  'caps.left': 'Restant',
  'caps.pending': 'Hausse en attente',
  'caps.row.deposit': 'Dépôts',
  'caps.row.stake': 'Mises',
  'caps.pending.at': '{amount} à partir du {date}',
  'caps.none': '—',
  'caps.save': 'Enregistrer mes plafonds',
  'caps.saved': 'Plafonds enregistrés.',
  'caps.invalid': 'Indiquez un montant entier en euros, de 1 € à 100 000 €.',
  'exclude.title': 'M\'exclure du jeu',
  'exclude.text': 'Pendant l\'exclusion, vous ne pourrez ni jouer, ni déposer, ni vous connecter. Elle ne peut pas être raccourcie.',
  'exclude.period': 'Durée',
  'exclude.7d': '7 jours',
  'exclude.1m': '1 mois',
  'exclude.3m': '3 mois',
  'exclude.6m': '6 mois',
  'exclude.1y': '1 an',
  'exclude.submit': 'M\'exclure',
  'exclude.confirm.title': 'Confirmer l\'exclusion',
  'exclude.confirm.text': 'Vous allez vous exclure du jeu pour {period}. Vous serez déconnecté(e) et ne pourrez plus jouer, déposer ni vous connecter avant la fin de cette période.',
  'exclude.confirm': 'Oui, m\'exclure',
  'exclude.cancel': 'Annuler',
  'exclude.done': 'Vous êtes exclu(e) du jeu jusqu\'au {date}.',
  'session.expired': 'Votre session a expiré. Reconnectez-vous.',
};

const EN = {
  'skip': 'Skip to the game',
  'nav.game': 'Play',
  'nav.history': 'History',
  'nav.account': 'My account',
  'nav.rules': 'Rules',
  'nav.login': 'Log in',
  'nav.register': 'Sign up',
  'nav.logout': 'Log out',
  'nav.label': 'Main navigation',
  'lang.switch': 'Français',
  'lang.switch.label': 'Passer en français',
  'balance': 'Balance',
  'balance.none': '—',
  'compass': 'Compass',
  'compass.label': 'Compass: {dir}',
  'compass.idle': 'Compass, waiting for a throw',
  'steps': 'Squares',
  'found': 'Symbols',
  'found.none': 'No symbol yet',
  'map.label': 'Map of the island, {w} × {h} squares',
  'stake': 'Stake',
  'play': 'Play',
  'throw': 'Throw',
  'throws': 'Throws',
  'throws.left': '{n} throw(s) left out of 4',
  'reason.login': 'Log in or sign up to play.',
  'reason.funds': 'Balance too low for a {stake} stake.',
  'reason.closed': 'Sales are not open.',
  'reason.closed.at': 'Sales open on {date}.',
  'reason.deposit': 'Add funds',
  'status.buying': 'Buying the game unit…',
  'status.ready': 'Press “Throw” to move the totem.',
  'status.throwing': 'Throwing…',
  'status.lost': 'Game over: no win this time.',
  'status.won': 'Game over: you won {amount}!',
  'status.resumed': 'Game #{id} resumed where it stopped.',
  'status.idle': 'Choose your stake, then press “Play”.',
  'replay.banner': 'Replaying game #{id} ({stake}).',
  'replay.back': 'Back to the game',
  'howto.title': 'How to play',
  'howto.1': 'Nine chests are hidden on the island.',
  'howto.2': 'Press “Throw”: the compass shows a direction and the counter a number of squares. The totem moves that far.',
  'howto.3': 'Every chest the totem passes over or stops on opens: empty (a cross) or a symbol, which lines up at the right of the map.',
  'howto.4': 'You have four throws. The winning combinations for your stake:',
  'howto.close': 'Let\'s go!',
  'win.title': 'Congratulations!',
  'win.text': 'You won',
  'win.credited': 'Your win is credited to your balance.',
  'win.close': 'Continue',
  'combo.3': '3 × {sym}',
  'combo.2': '2 × {sym}',
  'combo.1': '1 × {sym}',
  'sym.candlestick': 'candlestick',
  'sym.monkey': 'monkey',
  'sym.sapphire': 'sapphire',
  'sym.skull': 'skull',
  'sym.empty': 'empty chest',
  'dir.N': 'north', 'dir.NE': 'north-east', 'dir.E': 'east', 'dir.SE': 'south-east',
  'dir.S': 'south', 'dir.SW': 'south-west', 'dir.W': 'west', 'dir.NW': 'north-west',
  'dirshort.N': 'N', 'dirshort.E': 'E', 'dirshort.S': 'S', 'dirshort.W': 'W',
  'say.throw': 'Throw {n}: direction {dir}, {steps} square(s).',
  'say.chest': 'Chest opened: {what}.',
  'say.win': 'Game won: {amount}.',
  'say.lose': 'Game lost.',
  'login.title': 'Log in',
  'register.title': 'Sign up',
  'username': 'Username',
  'password': 'Password',
  'password.hint': 'At least 10 characters.',
  'adult': 'I declare that I am an adult.',
  'accept': 'I accept the rules of the game.',
  'accept.read': 'Read the rules',
  'login.submit': 'Log in',
  'register.submit': 'Create my account',
  'login.switch': 'No account yet? Sign up.',
  'register.switch': 'Already signed up? Log in.',
  'account.title': 'My account',
  'account.user': 'Player',
  'account.balance': 'Available funds',
  'account.deposit': 'Demo deposit: {amount}',
  'account.deposited': '{amount} added to your balance.',
  'account.demo': 'Demo mode: the money is not real.',
  'history.title': 'Play history',
  'history.empty': 'No game yet.',
  'history.more': 'Show more',
  'history.when': 'Date',
  'history.unit': 'Game unit',
  'history.unit.ref': 'Emission {e} · block {b} · no. {i}',
  'history.stake': 'Stake',
  'history.state': 'State',
  'history.outcome': 'Outcome',
  'history.action': 'Game',
  'state.in_progress': 'In progress',
  'state.finished': 'Finished',
  'outcome.win': 'Won: {amount}',
  'outcome.lose': 'Lost',
  'history.replay': 'Replay',
  'history.resume': 'Resume',
  'rules.title': 'Rules of the game',
  'rules.other': 'Lire en français',
  'rules.loading': 'Loading the rules…',
  'close': 'Close',
  'footer.risk': 'Gambling involves risks: debt, isolation, addiction. For help, call 09-74-75-13-13 (standard rate)',
  'footer.link': 'joueurs-info-service.fr',
  'footer.rules': 'Rules of the game',
  'footer.adults': 'No under-18s.',
  'error.network': 'The server does not answer. Check your connection and try again.',
  'error.generic': 'Something went wrong.',
  'sales.closed': 'Sales are not open yet.',
  'sales.opens': 'Sales open on {date}.',
  'nav.fair': 'Fairness',
  'fair.title': 'Fairness of the game',
  'fair.intro': 'The wins of each block of 450,000 game units are drawn before the sale from a secret. The fingerprint of that secret, sha256(secret), called the commitment, is published here before the block\'s first unit is sold: the secret can no longer change.',
  'fair.after': 'Once the block is sold out or its emission closed, the secret is published. Anyone can then check that sha256(secret) is the published commitment, recompute the whole block and compare it with the games played.',
  'fair.how': 'To check a closed block, run the command shown next to it (tresor block verify --secret … --commitment … --stake …), or follow docs/AUDIT.md with your own code.',
  'fair.id': 'Block',
  'fair.emission': 'Emission',
  'fair.stake': 'Stake',
  'fair.state': 'State',
  'fair.units': 'Units sold',
  'fair.commitment': 'Commitment sha256(secret)',
  'fair.secret': 'Secret',
  'fair.sold': '{sold} / {total}',
  'fair.secret.pending': 'Published when the block closes',
  'fair.verify': 'Check:',
  'fair.empty': 'No block yet.',
  'block.state.open': 'On sale',
  'block.state.suspended': 'Suspended',
  'block.state.sold_out': 'Sold out',
  'block.state.closed': 'Closed',
  'caps.legend': 'Caps over a rolling 7 days',
  'caps.title': 'My 7-day caps',
  'caps.deposit': 'Deposits (€)',
  'caps.stake': 'Stakes (€)',
  'caps.hint': 'You can lower them at any time; a raise only applies after 48 hours.',
  'caps.inforce': 'In force',
  'caps.used': 'Used',
  'caps.left': 'Left',
  'caps.pending': 'Pending raise',
  'caps.row.deposit': 'Deposits',
  'caps.row.stake': 'Stakes',
  'caps.pending.at': '{amount} from {date}',
  'caps.none': '—',
  'caps.save': 'Save my caps',
  'caps.saved': 'Caps saved.',
  'caps.invalid': 'Enter a whole number of euros, from €1 to €100,000.',
  'exclude.title': 'Exclude myself',
  'exclude.text': 'While excluded you cannot play, deposit or log in. An exclusion cannot be shortened.',
  'exclude.period': 'Length',
  'exclude.7d': '7 days',
  'exclude.1m': '1 month',
  'exclude.3m': '3 months',
  'exclude.6m': '6 months',
  'exclude.1y': '1 year',
  'exclude.submit': 'Exclude me',
  'exclude.confirm.title': 'Confirm the exclusion',
  'exclude.confirm.text': 'You are about to exclude yourself from play for {period}. You will be logged out and cannot play, deposit or log in until it ends.',
  'exclude.confirm': 'Yes, exclude me',
  'exclude.cancel': 'Cancel',
  'exclude.done': 'You are excluded from play until {date}.',
  'session.expired': 'Your session has expired. Please log in again.',
};

const DICTS = { fr: FR, en: EN };

function initialLang() {
  try {
    const saved = localStorage.getItem(STORE_KEY);
    if (saved === 'fr' || saved === 'en') return saved;
  } catch {
    // Private browsing may forbid storage: French, the default, then.
  }
  return 'fr';
}

let lang = initialLang();
const listeners = [];

/** The current language, `fr` or `en`. */
export function currentLang() {
  return lang;
}

/** Sets the language, remembers it and re-renders every listener. */
export function setLang(next) {
  lang = next === 'en' ? 'en' : 'fr';
  try {
    localStorage.setItem(STORE_KEY, lang);
  } catch {
    // Not remembered, still switched.
  }
  applyStatic(document);
  for (const fn of listeners) fn(lang);
}

/** Calls `fn` after every language change. */
export function onLangChange(fn) {
  listeners.push(fn);
}

/** The text for `key` with `{name}` placeholders filled from `params`. */
export function t(key, params = {}) {
  const text = DICTS[lang][key] ?? FR[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(params[name] ?? ''));
}

/**
 * Translates the static markup: `data-i18n="key"` sets the text,
 * `data-i18n-attr="aria-label:key;title:key2"` sets attributes.
 */
export function applyStatic(root) {
  document.documentElement.lang = lang;
  for (const node of root.querySelectorAll('[data-i18n]')) {
    node.textContent = t(node.dataset.i18n);
  }
  for (const node of root.querySelectorAll('[data-i18n-attr]')) {
    for (const pair of node.dataset.i18nAttr.split(';')) {
      const [attr, key] = pair.split(':');
      node.setAttribute(attr, t(key));
    }
  }
}

/** Cents as euros: "1,50 €" / "€1.50"; whole euros without decimals, as in the rules. */
export function money(cents) {
  const whole = cents % 100 === 0;
  return new Intl.NumberFormat(lang === 'fr' ? 'fr-FR' : 'en-IE', {
    style: 'currency',
    currency: 'EUR',
    minimumFractionDigits: whole ? 0 : 2,
    maximumFractionDigits: 2,
  }).format(cents / 100);
}

/** An RFC 3339 time as a local date and time. */
export function dateTime(rfc3339) {
  const date = new Date(rfc3339);
  if (Number.isNaN(date.getTime())) return rfc3339;
  return new Intl.DateTimeFormat(lang === 'fr' ? 'fr-FR' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'medium',
  }).format(date);
}
